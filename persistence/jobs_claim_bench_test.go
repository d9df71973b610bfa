package persistence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// BenchmarkClaimJobs is one worker's cycle on a queue shared by 4
// accounts: claim one job, finish it. It prices the fair claim against the
// finish it is paid beside (go test -run '^$' -bench ClaimJobs).
func BenchmarkClaimJobs(b *testing.B) {
	for _, backend := range persistencetest.Backends(b) {
		b.Run(backend.Name, func(b *testing.B) {
			db := backend.Open(b)
			ctx := b.Context()
			store := persistence.NewJobs(db)
			const accounts = 4
			for a := range accounts {
				require.NoError(b, persistence.NewAccounts(db).CreateAccount(ctx, newAccount(fmt.Sprintf("acct-%d", a), t0)))
			}
			for i := range b.N + 8 {
				created := t0.Add(time.Duration(i) * time.Millisecond)
				require.NoError(b, store.CreateJob(ctx, &domain.Job{
					ID: fmt.Sprintf("job-%07d", i), AccountID: fmt.Sprintf("acct-%d", i%accounts), Type: domain.JobTypeStandard,
					Status: domain.JobPending, Threshold: 0.5, Created: created, Updated: created,
				}))
			}
			now := t0.Add(time.Hour)
			b.ResetTimer()
			for range b.N {
				js, err := store.ClaimJobs(ctx, "w", now, now.Add(time.Minute), 1, 4)
				require.NoError(b, err)
				require.Len(b, js, 1)
				require.NoError(b, store.FinishJob(ctx, js[0].ID, "w", domain.JobCompleted, now, nil, nil, nil))
			}
		})
	}
}
