package persistence_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCreateFinishedJobReview prices what review routing adds to the
// write of a synchronous job (the fast path), in this process's CPU per
// job (cpu-ns/op) beside the wall time: no queue anywhere, two queues that
// the result does not match, and two queues of which it enters one (the
// item, its sealed content and the transaction instead of PostgreSQL's
// grouped statement). go test -run '^$' -bench CreateFinishedJobReview.
func BenchmarkCreateFinishedJobReview(b *testing.B) {
	for _, backend := range persistencetest.Backends(b) {
		for _, mode := range []string{"no-queues", "two-queues-no-match", "two-queues-match"} {
			b.Run(backend.Name+"/"+mode, func(b *testing.B) {
				db := backend.Open(b)
				_, key, err := ed25519.GenerateKey(rand.Reader)
				require.NoError(b, err)
				require.NoError(b, db.EncryptSecretsWith(key))
				ctx := b.Context()
				require.NoError(b, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
				store := persistence.NewJobs(db)
				rs := persistence.NewReview(db)
				if mode != "no-queues" {
					makeLabelQueues(b, rs)
				}
				rep := &rules.Report{Result: rules.OutcomeTrue}
				for i := range 20 {
					rep.Sections = append(rep.Sections, rules.SectionReport{Name: fmt.Sprintf("label-%02d", i), Result: rules.OutcomeFalse})
				}
				if mode == "two-queues-match" {
					rep.Sections[7].Result, rep.Sections[7].Score = rules.OutcomeTrue, 1
				}
				text := strings.Repeat("lorem ipsum ", 90)
				cpu := processCPU(b)
				b.ResetTimer()
				for i := range b.N {
					done := t0.Add(time.Second)
					j := &domain.Job{ID: fmt.Sprintf("job-%07d", i), AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
						PolicyID: "p", PolicyVersionID: "v1", Threshold: 0.5, Created: t0, Updated: t0, Completed: &done,
						Input: []domain.ContentItem{{Kind: domain.ContentText, Text: text}}}
					results := []*domain.JobResult{{ID: j.ID + "-r", JobID: j.ID, Report: rep, Created: t0}}
					require.NoError(b, store.CreateFinishedJob(ctx, j, results, nil))
				}
				b.StopTimer()
				b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// makeLabelQueues makes account a1's two queues of the routing benchmarks:
// each routes policy p's TRUE sections of one label scored in [0.5, 2).
func makeLabelQueues(b *testing.B, rs *persistence.Review) {
	for i, label := range []string{"label-07", "label-08"} {
		require.NoError(b, rs.CreateReviewQueue(b.Context(), &domain.ReviewQueue{ID: fmt.Sprintf("q%d", i), AccountID: "a1", Name: label,
			Routes:        []domain.ReviewRoute{{PolicyID: "p", Label: label, MinScore: 0.5, MaxScore: 2, Outcomes: []string{"OUTCOME_TRUE"}}},
			RetentionDays: 30, Created: t0, Updated: t0}, 100))
	}
}

// BenchmarkRoutingNoMatch prices routing's step of a job's write alone, for
// a result (a 20-section report) that enters none of the account's two
// queues: what every job of an account with queues pays. The write itself
// is BenchmarkCreateFinishedJobReview's.
func BenchmarkRoutingNoMatch(b *testing.B) {
	for _, mode := range []string{"no-queues", "two-queues"} {
		b.Run(mode, func(b *testing.B) {
			db := persistencetest.Open(b, persistencetest.SQLite)
			ctx := b.Context()
			require.NoError(b, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
			if mode == "two-queues" {
				makeLabelQueues(b, persistence.NewReview(db))
			}
			rep := &rules.Report{Result: rules.OutcomeFalse}
			for i := range 20 {
				rep.Sections = append(rep.Sections, rules.SectionReport{Name: fmt.Sprintf("label-%02d", i), Result: rules.OutcomeFalse, Score: 0.1})
			}
			job := domain.ReviewJob{ID: "j", AccountID: "a1", PolicyID: "p"}
			input := []domain.ContentItem{{Kind: domain.ContentText, Text: "hello"}}
			results := []*domain.JobResult{{ID: "r", JobID: "j", Report: rep, Created: t0}}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if n, err := db.ReviewItemsOf(ctx, job, input, results); err != nil || n != 0 {
						b.Fatalf("routing made %d items: %v", n, err)
					}
				}
			})
		})
	}
}

// Routing on the fast path's write (CreateFinishedJob): a matching result
// enters the queue once, with its content sealed; a result outside the
// route's band adds nothing. The workers' path (FinishJob) is covered end
// to end in cmd/contenteval.
func TestReviewRoutingOnWrite(t *testing.T) {
	for _, backend := range persistencetest.Backends(t) {
		t.Run(backend.Name, func(t *testing.T) {
			db := backend.Open(t)
			require.NoError(t, db.EncryptSecretsWith(newServerKey(t)))
			ctx := t.Context()
			require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
			rs := persistence.NewReview(db)
			require.NoError(t, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: "q", AccountID: "a1", Name: "threats",
				Routes:        []domain.ReviewRoute{{PolicyID: "p", Label: "Threat", MinScore: 0.5, MaxScore: 2}},
				RetentionDays: 30, Created: t0, Updated: t0}, 100))
			store := persistence.NewJobs(db)
			for i, tc := range []struct {
				score float64
				want  int
			}{{1, 1}, {0.2, 0}} {
				rep := &rules.Report{Sections: []rules.SectionReport{{Name: "Threat", Result: rules.OutcomeTrue, Score: tc.score}}}
				done := t0.Add(time.Second)
				j := &domain.Job{ID: fmt.Sprintf("fast-%d", i), AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
					PolicyID: "p", PolicyVersionID: "v1", Created: t0, Updated: t0, Completed: &done,
					Input: []domain.ContentItem{{Kind: domain.ContentText, Text: "secret words"}}}
				require.NoError(t, store.CreateFinishedJob(ctx, j, []*domain.JobResult{{ID: j.ID + "-r", JobID: j.ID, Report: rep, Created: t0}}, nil))
				items, _, err := rs.ListReviewItems(ctx, "a1", "q", "", t0, nil, 100, 1<<30)
				require.NoError(t, err)
				n := 0
				for _, it := range items {
					if it.JobID == j.ID {
						n++
						require.Equal(t, "secret words", it.Content.Text)
						require.Equal(t, []domain.ReviewMatch{{Label: "Threat", Score: 1, Outcome: "OUTCOME_TRUE"}}, it.Machine)
					}
				}
				require.Equal(t, tc.want, n, "score %v", tc.score)
			}
			var sealed []byte
			require.NoError(t, db.GetContext(ctx, &sealed, db.Rebind(`SELECT content FROM review_items WHERE job_id = ?`), "fast-0"))
			require.NotContains(t, string(sealed), "secret")
		})
	}
}
