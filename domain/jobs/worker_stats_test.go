package jobs

import (
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

// The stall limit is ten idle polls, never less than a lease: a claim
// that outlives its lease has lost its jobs, a shorter one is only slow.
func TestStallLimit(t *testing.T) {
	for _, tt := range []struct {
		poll, lease, want time.Duration
	}{
		{poll: 250 * time.Millisecond, lease: 30 * time.Second, want: 30 * time.Second},
		{poll: 5 * time.Second, lease: 30 * time.Second, want: 50 * time.Second},
		{poll: time.Second, lease: 10 * time.Second, want: 10 * time.Second},
	} {
		s := NewService(nil, nil, nil, domain.SystemClock{}, nil, Config{PollInterval: tt.poll, Lease: tt.lease}, nil)
		require.Equal(t, tt.want, s.StallLimit(), "poll %s lease %s", tt.poll, tt.lease)
	}
}

func TestLastPass(t *testing.T) {
	var st WorkerStats
	require.True(t, st.LastPass().IsZero(), "before the loop runs")
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	st.pass(now)
	require.True(t, now.Equal(st.LastPass()))
}
