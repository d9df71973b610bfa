package handlers

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

func TestReadBody(t *testing.T) {
	for _, tc := range []struct {
		name          string
		body          string
		contentLength int64 // -1: unknown (chunked)
		limit         int64
		tooLarge      bool
	}{
		{"at the limit", strings.Repeat("a", 1000), 1000, 1000, false},
		{"declared past the limit", strings.Repeat("a", 1001), 1001, 1000, true},
		{"chunked at the limit", strings.Repeat("a", 1000), -1, 1000, false},
		{"chunked past the limit", strings.Repeat("a", 5000), -1, 1000, true},
		{"empty", "", 0, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/", io.NopCloser(strings.NewReader(tc.body)))
			req.ContentLength = tc.contentLength
			b, err := readBody(req, tc.limit)
			if tc.tooLarge {
				require.Equal(t, domain.InvalidArgument, domain.ErrorCode(err))
				require.Contains(t, err.Error(), "too large")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.body, string(b))
		})
	}
}

func TestBadPathText(t *testing.T) {
	for in, want := range map[string]string{
		"abc": "", "caf\u00e9": "", "a%2Fb": "", "a%zz": "",
		"a\x00b": reasonNUL, "a\xffb": reasonUTF8,
		"a%2F%00b": reasonNUL, "a%2F%FFb": reasonUTF8,
	} {
		require.Equal(t, want, badPathText(in), "%q", in)
	}
}
