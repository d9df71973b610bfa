package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// PageTokens makes keyset page tokens: the cursor as JSON, bound to a scope
// (account, operation and the request's filters) and HMAC-signed, so a token
// cannot be forged, altered, or replayed against another request.
type PageTokens struct{ secret []byte }

// NewPageTokens returns a signer using secret.
func NewPageTokens(secret []byte) *PageTokens { return &PageTokens{secret: secret} }

// Encode returns the token for cursor within scope.
func (p *PageTokens) Encode(scope string, cursor any) string {
	body, err := json.Marshal(cursor)
	if err != nil {
		panic("page cursor is not JSON: " + err.Error()) // a programming error
	}
	sig := p.sign(scope, body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Decode checks token against scope and fills cursor. Codes: INVALID_ARGUMENT
// naming field.
func (p *PageTokens) Decode(field, token, scope string, cursor any) error {
	bad := InvalidField(field, "not a page token of this request")
	b64body, b64sig, ok := strings.Cut(token, ".")
	if !ok {
		return bad
	}
	body, err1 := base64.RawURLEncoding.DecodeString(b64body)
	sig, err2 := base64.RawURLEncoding.DecodeString(b64sig)
	if err1 != nil || err2 != nil || !hmac.Equal(sig, p.sign(scope, body)) {
		return bad
	}
	if json.Unmarshal(body, cursor) != nil {
		return bad
	}
	return nil
}

func (p *PageTokens) sign(scope string, body []byte) []byte {
	m := hmac.New(sha256.New, p.secret)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:16]
}

// PageSize applies the API's page-size rules: unset or 0 gives def, values
// above max are treated as max, negative values are INVALID_ARGUMENT.
func PageSize(field string, v *int32, def, max int) (int, error) {
	if v == nil || *v == 0 {
		return def, nil
	}
	if *v < 0 {
		return 0, InvalidField(field, "must not be negative")
	}
	if int(*v) > max {
		return max, nil
	}
	return int(*v), nil
}
