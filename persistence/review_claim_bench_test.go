package persistence_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// BenchmarkClaimReviewItemDepth prices claiming the next review item
// against the number of open items (10 or 100,000 in two queues, 100 of
// them with an SLA deadline, and 50 claims that expired), across the
// account's queues and in one queue, by one reviewer at a time or by 20
// claiming back to back without a pause (a saturation figure: the 20
// queue for the database and the 2 cores of the benchmark machine). Each
// claim is given back at once, so every claim sees the same items; p50-ms
// and p99-ms are of the claims alone. The paced case has the 20 reviewers
// wait 100 ms on average after each item, far quicker than a person
// decides one.
// (go test -run '^$' -bench ClaimReviewItemDepth -benchtime 2000x ./persistence/)
func BenchmarkClaimReviewItemDepth(b *testing.B) {
	for _, backend := range persistencetest.Backends(b) {
		for _, c := range claimBenchCases() {
			name := map[string]string{"": "any-queue", "q1": "one-queue"}[c.queue]
			pace := ""
			if c.pause > 0 {
				pace = "/paced"
			}
			b.Run(fmt.Sprintf("%s/open=%d/%s/reviewers=%d%s", backend.Name, c.depth, name, c.reviewers, pace), func(b *testing.B) {
				db := backend.Open(b)
				if backend.Name == persistencetest.Postgres {
					// The server's pool, not the tests' smaller one: 20
					// reviewers would otherwise wait for 4 connections.
					db.SetMaxOpenConns(persistence.PostgresPoolSize)
					db.SetMaxIdleConns(persistence.PostgresPoolSize)
				}
				now := fillReviewItems(b, db, c.depth)
				rs := persistence.NewReview(db)
				var mu sync.Mutex
				var took []time.Duration
				record := true
				cycle := func(token string) bool {
					start := time.Now()
					it, err := rs.ClaimReviewItem(b.Context(), "a1", c.queue, domain.ReviewClaim{Token: token, By: "r", Now: now, Expires: now.Add(10 * time.Minute)})
					d := time.Since(start)
					if err == nil {
						err = rs.ReleaseReviewClaim(b.Context(), "a1", it.ID, token, now, false)
					}
					if err != nil {
						b.Error(err)
						return false
					}
					mu.Lock()
					if record {
						took = append(took, d)
					}
					mu.Unlock()
					return true
				}
				// A running server's connections are open and have the
				// claim prepared; a connection's first claim, which opens it
				// and prepares the statement, is not what this measures.
				record = false
				var warm sync.WaitGroup
				for r := range c.reviewers {
					warm.Go(func() { cycle(fmt.Sprintf("warm-%d", r)) })
				}
				warm.Wait()
				record = true
				b.ResetTimer()
				if c.reviewers == 1 {
					for i := 0; b.Loop(); i++ {
						if !cycle(fmt.Sprintf("t-%d", i)) {
							return
						}
					}
				} else {
					b.SetParallelism(max(1, c.reviewers/runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						for i := 0; pb.Next(); i++ {
							if !cycle(fmt.Sprintf("t-%p-%d", pb, i)) {
								return
							}
							if c.pause > 0 {
								// Reviewers who do not all start and finish
								// together: a pause of 0 to twice the mean.
								time.Sleep(rand.N(2 * c.pause))
							}
						}
					})
				}
				b.StopTimer()
				slices.Sort(took)
				if len(took) > 0 {
					b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
				}
			})
		}
	}
}

type claimBenchCase struct {
	depth     int
	queue     string
	reviewers int
	pause     time.Duration // between two claims of a reviewer
}

func claimBenchCases() []claimBenchCase {
	var out []claimBenchCase
	for _, depth := range []int{10, 100_000} {
		for _, queue := range []string{"", "q1"} {
			for _, r := range []struct {
				n     int
				pause time.Duration
			}{{1, 0}, {20, 0}, {20, 100 * time.Millisecond}} {
				out = append(out, claimBenchCase{depth, queue, r.n, r.pause})
			}
		}
	}
	return out
}

// fillReviewItems makes account a1 with queues q0 (priority 1) and q1 and n
// open items spread over them in one statement, 100 with an SLA deadline
// and 50 more whose claims expired, and returns a time after all of them.
func fillReviewItems(tb testing.TB, db *persistence.DB, n int) time.Time {
	tb.Helper()
	ctx := tb.Context()
	require.NoError(tb, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
	rs := persistence.NewReview(db)
	for i := range 2 {
		require.NoError(tb, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: fmt.Sprintf("q%d", i), AccountID: "a1", Name: fmt.Sprintf("q%d", i),
			Priority: 1 - i, RetentionDays: 30, Created: t0, Updated: t0}, 100))
	}
	first := persistence.StoredTime(t0)
	var q string
	var args []any
	if db.Dialect == persistence.Postgres {
		q = `INSERT INTO review_items (id, account_id, queue_id, queue_priority, job_id, job_result_id, machine, state,
				sla_deadline, position, claim_token, claim_expires_at, created)
			SELECT 'item-' || lpad(i::text, 7, '0'), 'a1', 'q' || (i % 2), 1 - i % 2, 'job-' || i, 'res-' || i, '[]',
				CASE WHEN i < $2 THEN 'claimed' ELSE 'open' END,
				CASE WHEN i % 1000 = 7 THEN t + interval '1 day' END, t,
				CASE WHEN i < $2 THEN 'stale-' || i ELSE '' END, CASE WHEN i < $2 THEN t END, t
			FROM generate_series(0, $1 - 1) AS i, LATERAL (SELECT $3::timestamptz + i * interval '1 microsecond' AS t) AS c`
		args = []any{n + 50, 50, first}
	} else {
		q = `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
			INSERT INTO review_items (id, account_id, queue_id, queue_priority, job_id, job_result_id, machine, state,
				sla_deadline, position, claim_token, claim_expires_at, created)
			SELECT 'item-' || printf('%07d', i), 'a1', 'q' || (i % 2), 1 - i % 2, 'job-' || i, 'res-' || i, '[]',
				CASE WHEN i < ? THEN 'claimed' ELSE 'open' END,
				CASE WHEN i % 1000 = 7 THEN ? + i + 86400000000 END, ? + i,
				CASE WHEN i < ? THEN 'stale-' || i ELSE '' END, CASE WHEN i < ? THEN ? + i END, ? + i
			FROM n`
		m := first.UnixMicro()
		args = []any{n + 50, 50, m, m, 50, 50, m, m}
	}
	_, err := db.ExecContext(ctx, q, args...)
	require.NoError(tb, err)
	_, err = db.ExecContext(ctx, `ANALYZE`)
	require.NoError(tb, err)
	return t0.Add(time.Hour)
}

// TestReview_ClaimReadsTheNextOpenItemFromAnIndex: the claim's read of the
// next open item, across the account's queues and in one queue, is the
// head of an index in the claim order, not a sort of every open item
// (which made a claim at 100,000 open items take seconds).
func TestReview_ClaimReadsTheNextOpenItemFromAnIndex(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		for queue, index := range map[string]string{"": "review_items_next_idx", "q1": "review_items_queue_next_idx"} {
			plan, err := persistence.NewReview(db).ExplainClaimOpenItem(t.Context(), "a1", queue)
			require.NoError(t, err)
			requireIndexedPlan(t, db, plan, index)
			if db.Dialect != persistence.Postgres {
				continue
			}
			// The statement run on PostgreSQL: the same read of the index's
			// head, then the chosen item updated by its key (the one sort is
			// of the two candidates).
			plan, err = persistence.NewReview(db).ExplainClaimNext(t.Context(), "a1", queue)
			require.NoError(t, err)
			for _, want := range []string{index, "Index Scan using review_items_pkey", "CTE Scan on e"} {
				require.Contains(t, plan, want)
			}
			require.NotContains(t, plan, "Seq Scan")
			require.NotContains(t, plan, "Bitmap")
		}
	})
}

// TestReview_ClaimOrderAcrossOpenAndExpired: a claim takes the first item
// in the claim order, whether it is open or its claim expired (the two are
// read apart): priority, then SLA deadline, then position; a live claim is
// never taken.
func TestReview_ClaimOrderAcrossOpenAndExpired(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		rs := persistence.NewReview(db)
		for i, prio := range []int{0, 1} {
			require.NoError(t, rs.CreateReviewQueue(ctx, &domain.ReviewQueue{ID: fmt.Sprintf("q%d", i), AccountID: "a1", Name: fmt.Sprintf("q%d", i),
				Priority: prio, RetentionDays: 30, Created: t0, Updated: t0}, 100))
		}
		now := t0.Add(time.Hour)
		deadline := now.Add(time.Hour)
		for _, it := range []struct {
			id, queue, state string
			position         int
			claimUntil       time.Time
			sla              *time.Time
		}{
			{"open-late", "q0", "open", 3, time.Time{}, nil},
			{"expired-early", "q0", "claimed", 1, now.Add(-time.Minute), nil},
			{"live-earliest", "q0", "claimed", 0, now.Add(time.Minute), nil},
			{"open-with-deadline", "q0", "open", 5, time.Time{}, &deadline},
			{"expired-high-priority", "q1", "claimed", 9, now.Add(-time.Second), nil},
		} {
			var claimUntil, sla any
			if !it.claimUntil.IsZero() {
				claimUntil = persistence.StoredTime(it.claimUntil)
			}
			if it.sla != nil {
				sla = persistence.StoredTime(*it.sla)
			}
			_, err := db.ExecContext(ctx, db.Rebind(`INSERT INTO review_items (id, account_id, queue_id, queue_priority, job_id, job_result_id,
				machine, state, sla_deadline, position, claim_token, claim_expires_at, created)
				VALUES (?, 'a1', ?, ?, ?, ?, '[]', ?, ?, ?, ?, ?, ?)`),
				it.id, it.queue, map[string]int{"q0": 0, "q1": 1}[it.queue], "job-"+it.id, "res-"+it.id, it.state, sla,
				persistence.StoredTime(t0.Add(time.Duration(it.position)*time.Second)), "token-"+it.id, claimUntil, persistence.StoredTime(t0))
			require.NoError(t, err)
		}
		claimAll := func(queue string) []string {
			var got []string
			for i := 0; ; i++ {
				token := fmt.Sprintf("%s-%d", queue, i)
				it, err := rs.ClaimReviewItem(ctx, "a1", queue, domain.ReviewClaim{Token: token, By: "r", Now: now, Expires: now.Add(10 * time.Minute)})
				if err != nil {
					requireCode(t, err, domain.NotFound)
					return got
				}
				got = append(got, it.ID)
				defer func() { require.NoError(t, rs.ReleaseReviewClaim(ctx, "a1", it.ID, token, now, false)) }()
			}
		}
		require.Equal(t, []string{"open-with-deadline", "expired-early", "open-late"}, claimAll("q0"))
		require.Equal(t, []string{"expired-high-priority", "open-with-deadline", "expired-early", "open-late"}, claimAll(""))
	})
}
