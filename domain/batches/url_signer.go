package batches

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// URLSigner makes and checks the signed URLs of the API's own file
// endpoints (batch input upload, output download): an HMAC-SHA256 over the
// method, the object id and the expiry, so a URL cannot be altered, reused
// for another object or method, or used after it expires. Every replica
// derives the same secret from the shared signing key.
type URLSigner struct{ secret []byte }

// NewURLSigner returns a signer using secret.
func NewURLSigner(secret []byte) *URLSigner { return &URLSigner{secret: secret} }

func (s *URLSigner) mac(method, id string, expires int64) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(method))
	m.Write([]byte{0})
	m.Write([]byte(id))
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatInt(expires, 10)))
	return m.Sum(nil)
}

// Sign returns the query (expires=UNIX&signature=...) authorizing method on
// id until expires.
func (s *URLSigner) Sign(method, id string, expires time.Time) url.Values {
	exp := expires.Unix()
	return url.Values{
		"expires":   {strconv.FormatInt(exp, 10)},
		"signature": {base64.RawURLEncoding.EncodeToString(s.mac(method, id, exp))},
	}
}

// Verify checks a signature (constant-time) and the expiry against now.
// Codes: PERMISSION_DENIED for an altered, foreign or expired URL; the
// message does not say which, so it cannot be used as an oracle.
func (s *URLSigner) Verify(method, id string, expires int64, signature string, now time.Time) error {
	denied := domain.Errorf(domain.PermissionDenied, "the signed URL is not valid or has expired")
	sig, err := base64.RawURLEncoding.DecodeString(signature)
	if err != nil {
		return denied
	}
	if !hmac.Equal(sig, s.mac(method, id, expires)) {
		return denied
	}
	if now.Unix() >= expires {
		return denied
	}
	return nil
}
