// Package paging reads keyset-paged lists: page sizes with the API's
// defaults and maxima, and page tokens, the cursor of the next page bound to
// the request that asked for it and signed, so a client can neither forge
// one nor replay it against another list.
package paging

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// Tokens makes keyset page tokens: the cursor as JSON, bound to a scope
// (account, operation and the request's filters) and HMAC-signed, so a token
// cannot be forged, altered, or replayed against another request.
type Tokens struct{ secret []byte }

// NewTokens returns a signer using secret.
func NewTokens(secret []byte) *Tokens { return &Tokens{secret: secret} }

// Encode returns the token for cursor within scope.
func (p *Tokens) Encode(scope string, cursor any) string {
	body, err := json.Marshal(cursor)
	if err != nil {
		panic("page cursor is not JSON: " + err.Error()) // a programming error
	}
	sig := p.sign(scope, body)
	return base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// Decode checks token against scope and fills cursor. Codes: INVALID_ARGUMENT
// naming field.
func (p *Tokens) Decode(field, token, scope string, cursor any) error {
	bad := domain.InvalidField(field, "not a page token of this request")
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

func (p *Tokens) sign(scope string, body []byte) []byte {
	m := hmac.New(sha256.New, p.secret)
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write(body)
	return m.Sum(nil)[:16]
}

// Size applies the API's page-size rules: unset or 0 gives def, values
// above max are treated as max, negative values are INVALID_ARGUMENT.
func Size(field string, v *int32, def, max int) (int, error) {
	if v == nil || *v == 0 {
		return def, nil
	}
	if *v < 0 {
		return 0, domain.InvalidField(field, "must not be negative")
	}
	if int(*v) > max {
		return max, nil
	}
	return int(*v), nil
}

// Query is a keyset page as a list operation is asked for it.
type Query struct {
	// SizeField and TokenField are the request's names for the page size
	// and token, for the errors that name them.
	SizeField, TokenField string
	Size                  *int32
	Token                 string
	Default, Max          int
	// Scope binds the page tokens to the account, the operation and the
	// request's filters.
	Scope string
}

// Keyset reads one page of a keyset-paged list: it checks the size, runs
// check (the existence of what is listed: another account's object is
// NOT_FOUND whatever the token), decodes the token into the cursor (nil on
// the first page), and asks fetch for one row more than the page holds, to
// know whether there is a next page. It returns the page's rows and the
// token of the next page, the cursor of the page's last row ("" on the last
// page). Codes: INVALID_ARGUMENT naming the size or the token; check's and
// fetch's.
func Keyset[T, C any](tokens *Tokens, q Query, check func() error,
	fetch func(after *C, limit int) ([]T, error), cursorOf func(T) C) ([]T, string, error) {
	return KeysetBounded(tokens, q, check, func(after *C, size int) ([]T, bool, error) {
		rows, err := fetch(after, size+1)
		if err != nil || len(rows) <= size {
			return rows, false, err
		}
		return rows[:size], true, nil
	}, cursorOf)
}

// KeysetBounded is Keyset for a store that may return fewer rows than the
// page size and says whether more follow: a page bounded in bytes as well
// as in rows. fetch returns at most size rows.
func KeysetBounded[T, C any](tokens *Tokens, q Query, check func() error,
	fetch func(after *C, size int) ([]T, bool, error), cursorOf func(T) C) ([]T, string, error) {
	size, err := Size(q.SizeField, q.Size, q.Default, q.Max)
	if err != nil {
		return nil, "", err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, "", err
		}
	}
	var after *C
	if q.Token != "" {
		after = new(C)
		if err := tokens.Decode(q.TokenField, q.Token, q.Scope, after); err != nil {
			return nil, "", err
		}
	}
	rows, more, err := fetch(after, size)
	if err != nil || !more || len(rows) == 0 {
		return rows, "", err
	}
	return rows, tokens.Encode(q.Scope, cursorOf(rows[len(rows)-1])), nil
}
