package domain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The transition table, spelled out: the forward chain, CANCELLED from every
// non-terminal state, ERROR likewise, nothing else.
func TestBatchTransitions(t *testing.T) {
	t.Parallel()
	legal := map[[2]BatchState]bool{}
	chain := []BatchState{BatchInitialized, BatchQueued, BatchPreprocessing, BatchPreprocessed, BatchSubmitted,
		BatchEvaluating, BatchPostprocessing, BatchPostprocessed, BatchCompleted}
	for i := 0; i+1 < len(chain); i++ {
		legal[[2]BatchState{chain[i], chain[i+1]}] = true
		legal[[2]BatchState{chain[i], BatchCancelled}] = true
		legal[[2]BatchState{chain[i], BatchError}] = true
	}
	for _, from := range append(BatchStates, "bogus") {
		for _, to := range append(BatchStates, "bogus") {
			want := legal[[2]BatchState{from, to}]
			require.Equal(t, want, CanTransition(from, to), "%s -> %s", from, to)
			if err := CheckTransition(from, to); want {
				require.NoError(t, err)
			} else {
				require.Equal(t, FailedPrecondition, ErrorCode(err))
			}
		}
	}
	for _, s := range BatchStates {
		require.Equal(t, s == BatchCompleted || s == BatchError || s == BatchCancelled, s.Terminal(), s)
	}
}

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
		require.Equal(t, PermissionDenied, ErrorCode(err), name)
	}
}
