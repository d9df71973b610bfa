package paging

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// TestKeysetPage walks a list of 7 rows in pages of 3 and checks the
// errors' order: the size, then what is listed, then the token.
func TestKeyset(t *testing.T) {
	t.Parallel()
	tokens := NewTokens([]byte("secret"))
	rows := []int{10, 20, 30, 40, 50, 60, 70}
	type cursor struct {
		V int `json:"v"`
	}
	fetch := func(after *cursor, limit int) ([]int, error) {
		i := 0
		if after != nil {
			i = slices.Index(rows, after.V) + 1
		}
		return rows[i:min(len(rows), i+limit)], nil
	}
	cursorOf := func(v int) cursor { return cursor{v} }
	size := int32(3)
	q := Query{SizeField: "pageSize", TokenField: "pageToken", Size: &size, Default: 2, Max: 5, Scope: "s"}

	var got [][]int
	for {
		page, next, err := Keyset(tokens, q, nil, fetch, cursorOf)
		require.NoError(t, err)
		got = append(got, page)
		if next == "" {
			break
		}
		q.Token = next
	}
	require.Equal(t, [][]int{{10, 20, 30}, {40, 50, 60}, {70}}, got)

	other := q
	other.Scope = "another request"
	_, _, err := Keyset(tokens, other, nil, fetch, cursorOf)
	require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err), "a token is bound to its scope")

	missing := func() error { return domain.Errorf(domain.NotFound, "gone") }
	_, _, err = Keyset(tokens, other, missing, fetch, cursorOf)
	require.Equal(t, domain.NotFound, domain.ErrorCode(err), "what is listed is checked before the token")

	negative := int32(-1)
	bad := q
	bad.Size = &negative
	_, _, err = Keyset(tokens, bad, missing, fetch, cursorOf)
	require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err), "the size is checked first")

	big := int32(100)
	q.Size, q.Token = &big, ""
	page, next, err := Keyset(tokens, q, nil, fetch, cursorOf)
	require.NoError(t, err)
	require.Equal(t, rows[:5], page, "sizes above the maximum are the maximum")
	require.NotEmpty(t, next)
}
