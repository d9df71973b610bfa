package persistence_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func TestWebhookLeasesAreExclusive(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		store := persistence.NewWebhooks(db)
		for i := 0; i < 50; i++ {
			require.NoError(t, store.EnqueueWebhook(ctx, &domain.WebhookEvent{
				ID: fmt.Sprintf("e%02d", i), AccountID: "a1", URL: "https://example.invalid/", Type: "job.completed",
				SubjectKind: "job", SubjectID: "j", Created: t0,
			}))
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < 5; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for {
					es, err := store.ClaimWebhooks(ctx, fmt.Sprint("w", w), t0, time.Minute, 7)
					require.NoError(t, err)
					if len(es) == 0 {
						return
					}
					mu.Lock()
					for _, e := range es {
						seen[e.ID]++
					}
					mu.Unlock()
				}
			}(w)
		}
		wg.Wait()
		require.Len(t, seen, 50)
		for id, n := range seen {
			require.Equal(t, 1, n, id)
		}
		// A lost lease cannot finish the event.
		err := store.FinishWebhook(ctx, "e00", "someone-else", domain.WebhookAttempt{Next: t0})
		requireCode(t, err, domain.Aborted)
	})
}

// TestWebhookTraceContext: the trace context an event is written with is
// the one it is claimed with, so that its delivery continues that trace.
func TestWebhookTraceContext(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		store := persistence.NewWebhooks(db)
		for _, tc := range []struct{ id, parent, state string }{
			{"traced", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=opaque"},
			{"untraced", "", ""},
		} {
			require.NoError(t, store.EnqueueWebhook(ctx, &domain.WebhookEvent{
				ID: tc.id, AccountID: "a1", URL: "https://example.invalid/", Type: "job.completed",
				SubjectKind: "job", SubjectID: "j", Created: t0, TraceParent: tc.parent, TraceState: tc.state,
			}))
			got, err := store.GetWebhook(ctx, tc.id)
			require.NoError(t, err)
			require.Equal(t, [2]string{tc.parent, tc.state}, [2]string{got.TraceParent, got.TraceState}, tc.id)
		}
		claimed, err := store.ClaimWebhooks(ctx, "w", t0, time.Minute, 10)
		require.NoError(t, err)
		require.Len(t, claimed, 2)
		for _, e := range claimed {
			if e.ID == "traced" {
				require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", e.TraceParent)
			}
		}
	})
}
