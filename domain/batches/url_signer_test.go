package batches

import (
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

func TestURLSigner(t *testing.T) {
	t.Parallel()
	s := NewURLSigner([]byte("secret"))
	now := time.Unix(1_800_000_000, 0)
	q := s.Sign("PUT", "b1", now.Add(4*time.Hour))
	exp := now.Add(4 * time.Hour).Unix()
	sig := q.Get("signature")
	require.NoError(t, s.Verify("PUT", "b1", exp, sig, now))
	for name, err := range map[string]error{
		"expired":      s.Verify("PUT", "b1", exp, sig, now.Add(4*time.Hour)),
		"other method": s.Verify("GET", "b1", exp, sig, now),
		"other batch":  s.Verify("PUT", "b2", exp, sig, now),
		"later expiry": s.Verify("PUT", "b1", exp+3600, sig, now),
		"altered":      s.Verify("PUT", "b1", exp, sig[:len(sig)-2]+"AA", now),
		"not base64":   s.Verify("PUT", "b1", exp, "!!", now),
		"other secret": NewURLSigner([]byte("other")).Verify("PUT", "b1", exp, sig, now),
	} {
		require.Equal(t, domain.PermissionDenied, domain.ErrorCode(err), name)
	}
}
