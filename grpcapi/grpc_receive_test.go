package grpcapi

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/stats"
)

// TestReceiveSlots: a request takes a slot of its connection, then one of
// the process; without both it waits, and gives up with its call.
func TestReceiveSlots(t *testing.T) {
	for _, tc := range []struct {
		name             string
		process, perConn int
		held             []int // the connection of each request already receiving
		conn             int   // the connection of the next request
		waits            bool
	}{
		{"free", 2, 1, nil, 0, false},
		{"its connection is full", 4, 1, []int{0}, 0, true},
		{"another connection is full", 4, 1, []int{1}, 0, false},
		{"the process is full", 2, 2, []int{1, 2}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := newReceiveSlots(tc.process, tc.perConn)
			tagger := connTagger{slots: slots}
			conns := make([]context.Context, 3)
			for i := range conns {
				conns[i] = tagger.TagConn(context.Background(), &stats.ConnTagInfo{})
			}
			var releases []func()
			for _, c := range tc.held {
				release, err := slots.take(conns[c])
				require.NoError(t, err)
				releases = append(releases, release)
			}
			ctx, cancel := context.WithCancel(conns[tc.conn])
			if tc.waits {
				cancel() // a waiting request gives up when its call ends
			}
			defer cancel()
			release, err := slots.take(ctx)
			if tc.waits {
				require.ErrorIs(t, err, context.Canceled)
				// Once the holders are done, it gets its slots.
				for _, r := range releases {
					r()
				}
				releases = nil
				release, err = slots.take(conns[tc.conn])
			}
			require.NoError(t, err)
			release()
			for _, r := range releases {
				r()
			}
			require.Empty(t, slots.process, "every slot is given back")
		})
	}
}
