package domain

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/url"
	"strconv"
	"time"
)

// BlobStore keeps files too large for a database row: batch input and output
// files (DESIGN §2). Keys are slash-separated paths of [A-Za-z0-9._-]
// segments chosen by the service, never by a client. Two adapters implement
// it (package blobstore): a local directory and an S3-compatible store.
type BlobStore interface {
	// Put stores r under key, replacing what was there, and returns its size.
	// The replacement is atomic: a concurrent Open sees the old or the new
	// content, never a mix. Codes: INVALID_ARGUMENT (bad key), UNAVAILABLE.
	Put(ctx context.Context, key string, r io.Reader) (int64, error)
	// Open returns the content of key. Codes: NOT_FOUND, UNAVAILABLE.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat returns the size of key. Codes: NOT_FOUND, UNAVAILABLE.
	Stat(ctx context.Context, key string) (int64, error)
	// Delete removes key; deleting a missing key is not an error.
	// Codes: UNAVAILABLE.
	Delete(ctx context.Context, key string) error
	// PresignURL returns a URL that lets anyone holding it PUT or GET key
	// until expires, without other credentials, when the store can make one
	// (S3). ok is false when it cannot (the local directory): the API's own
	// signed endpoints serve the file then.
	PresignURL(ctx context.Context, method, key string, expires time.Time) (u string, ok bool, err error)
}

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
	denied := Errorf(PermissionDenied, "the signed URL is not valid or has expired")
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
