package domain

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeysetPage walks a list of 7 rows in pages of 3 and checks the
// errors' order: the size, then what is listed, then the token.
func TestKeysetPage(t *testing.T) {
	t.Parallel()
	tokens := NewPageTokens([]byte("secret"))
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
	q := PageQuery{SizeField: "pageSize", TokenField: "pageToken", Size: &size, Default: 2, Max: 5, Scope: "s"}

	var got [][]int
	for {
		page, next, err := KeysetPage(tokens, q, nil, fetch, cursorOf)
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
	_, _, err := KeysetPage(tokens, other, nil, fetch, cursorOf)
	require.Equal(t, InvalidArgument, ErrorCode(err), "a token is bound to its scope")

	missing := func() error { return Errorf(NotFound, "gone") }
	_, _, err = KeysetPage(tokens, other, missing, fetch, cursorOf)
	require.Equal(t, NotFound, ErrorCode(err), "what is listed is checked before the token")

	negative := int32(-1)
	bad := q
	bad.Size = &negative
	_, _, err = KeysetPage(tokens, bad, missing, fetch, cursorOf)
	require.Equal(t, InvalidArgument, ErrorCode(err), "the size is checked first")

	big := int32(100)
	q.Size, q.Token = &big, ""
	page, next, err := KeysetPage(tokens, q, nil, fetch, cursorOf)
	require.NoError(t, err)
	require.Equal(t, rows[:5], page, "sizes above the maximum are the maximum")
	require.NotEmpty(t, next)
}
