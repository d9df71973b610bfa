package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

func TestKeepLease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		answers     []error // renewal results in turn; then nil
		run         time.Duration
		wantRenews  int
		wantCancels bool
	}{
		{name: "renews every third of the lease", run: 10 * time.Second, wantRenews: 3},
		{name: "a lost lease cancels the work", answers: []error{nil, domain.Errorf(domain.Aborted, "lost")}, run: time.Minute, wantRenews: 2, wantCancels: true},
		{name: "other errors are retried", answers: []error{errors.New("db down"), domain.Errorf(domain.Unavailable, "x")}, run: 10 * time.Second, wantRenews: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var renews atomic.Int32
				stop := KeepLease(ctx, cancel, 9*time.Second, func(context.Context) error {
					n := int(renews.Add(1))
					if n <= len(tc.answers) {
						return tc.answers[n-1]
					}
					return nil
				})
				time.Sleep(tc.run)
				synctest.Wait()
				require.Equal(t, tc.wantCancels, ctx.Err() != nil)
				stop()
				require.Equal(t, tc.wantRenews, int(renews.Load()))
				time.Sleep(time.Minute)
				require.Equal(t, tc.wantRenews, int(renews.Load()), "no renewal after stop")
			})
		})
	}
}

func TestPollLoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		wake, freed := make(chan struct{}, 1), make(chan struct{}, 1)
		var claims atomic.Int32
		more := atomic.Bool{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			PollLoop(ctx, time.Second, wake, freed, func() bool {
				claims.Add(1)
				return more.Swap(false)
			})
		}()
		synctest.Wait()
		require.EqualValues(t, 1, claims.Load(), "claims at once")

		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 1, claims.Load(), "idle until the interval")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.EqualValues(t, 2, claims.Load(), "polls at the interval")

		wake <- struct{}{}
		synctest.Wait()
		require.EqualValues(t, 3, claims.Load(), "a wake-up claims at once")
		freed <- struct{}{}
		synctest.Wait()
		require.EqualValues(t, 4, claims.Load(), "a freed slot claims at once")

		more.Store(true)
		wake <- struct{}{}
		synctest.Wait()
		require.EqualValues(t, 6, claims.Load(), "a full claim claims again straight away")

		cancel()
		<-done
		require.EqualValues(t, 6, claims.Load())
	})
}
