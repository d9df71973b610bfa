package domain

import (
	"testing"

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
