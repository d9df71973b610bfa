package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// BenchmarkFastPath is a synchronous job on the fast path, as jobsload
// sends it: one 1 KiB text item against a 20-label policy, evaluated
// before the job is stored, then recorded finished in one write. It is
// the path every synchronous text job takes, so the evaluation package's
// loop and error mapping sit in it.
func BenchmarkFastPath(b *testing.B) {
	for _, backend := range persistencetest.Backends(b) {
		b.Run(backend.Name, func(b *testing.B) {
			db := backend.Open(b)
			ctx := context.Background()
			clock := domain.SystemClock{}
			tokens := paging.NewTokens([]byte("secret"))
			account := &domain.Account{ID: domain.NewID(), Name: "bench", Type: domain.AccountPolicyFirst,
				Limits: domain.Limits{RequestsPerSecond: 1e6, Burst: 1e6}, Created: clock.Now(), Updated: clock.Now()}
			if err := persistence.NewAccounts(db).CreateAccount(ctx, account); err != nil {
				b.Fatal(err)
			}
			ps := policies.NewService(persistence.NewPolicies(db), clock, tokens, policies.Config{}, nil)
			var src strings.Builder
			for i := range 20 {
				fmt.Fprintf(&src, "LABEL \"L%d\" { =(\"word%d\") OR =(\"other phrase %d\") }\n", i, i, i)
			}
			p, _, err := ps.Create(ctx, account, "bench", src.String())
			if err != nil {
				b.Fatal(err)
			}
			svc := jobs.NewService(persistence.NewJobs(db), ps, persistence.NewAccounts(db), clock, tokens, jobs.Config{}, nil)
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				svc.Shutdown(ctx)
			})
			text := strings.Repeat("a quiet sentence about the weather, word7 ", 30)[:1024]
			req := jobs.Request{PolicyID: p.ID, Content: []domain.ContentInput{{Text: &text}}, Wait: true}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				j, err := svc.Submit(ctx, account, req)
				if err != nil || j.Status != domain.JobCompleted {
					b.Fatalf("job %v: %v", j, err)
				}
			}
		})
	}
}
