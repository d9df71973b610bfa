package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/contenteval/contenteval/persistence"
)

// claimBatch is what one claim asks for, as a worker does.
const claimBatch = 8

// measureClaims queues o.queued jobs in both databases and measures
// claims of claimBatch through the job store (in this process, on its own
// connection pool), alternating the databases; the queued jobs are
// removed afterwards.
func measureClaims(ctx context.Context, o options, empty, full *env) error {
	stores := map[*env]*persistence.DB{}
	for _, e := range []*env{empty, full} {
		if err := queue(ctx, e.db, e.accountID, e.policyID, o.queued); err != nil {
			return err
		}
		u := e.dbURL
		if e.backend == "postgres" {
			u = withQuery(u, "application_name", e.appName+"_claim")
		}
		db, err := persistence.Open(ctx, u)
		if err != nil {
			return err
		}
		defer db.Close()
		stores[e] = db
	}
	samples := map[*env][]sample{}
	for a := range o.alternations {
		order := []*env{empty, full}
		if a%2 == 1 {
			order = []*env{full, empty}
		}
		for _, e := range order {
			s, err := measureClaim(ctx, e, stores[e], o.n)
			if err != nil {
				return err
			}
			samples[e] = append(samples[e], s)
		}
	}
	e, f := medians(samples[empty]), medians(samples[full])
	fmt.Printf("| queue claim of %d, %d queued (in process) | %.2f | %.2f | %.2f | %.2f | %.2f | - | %.2f / %.2f |\n",
		claimBatch, o.queued, ms(e.p50), ms(f.p50), ms(f.p50)/ms(e.p50), ms(e.p99), ms(f.p99), ms(e.dbCPU), ms(f.dbCPU))
	for _, e := range []*env{empty, full} {
		if _, err := e.db.ExecContext(ctx, e.db.Rebind(`DELETE FROM jobs WHERE account_id = ? AND status IN ('pending', 'running')`), e.accountID); err != nil {
			return err
		}
	}
	return nil
}

func measureClaim(ctx context.Context, e *env, db *persistence.DB, n int) (sample, error) {
	jobs := persistence.NewJobs(db)
	claim := func() (time.Duration, error) {
		now := time.Now()
		start := time.Now()
		got, err := jobs.ClaimJobs(ctx, "history-bench", now, now.Add(time.Hour), claimBatch, 0)
		if err == nil && len(got) != claimBatch {
			err = fmt.Errorf("claimed %d jobs, not %d", len(got), claimBatch)
		}
		return time.Since(start), err
	}
	if _, err := claim(); err != nil {
		return sample{}, err
	}
	pids := e.backendPIDsOf(ctx, e.appName+"_claim")
	db0 := pidsCPU(pids)
	lat := make([]time.Duration, 0, n)
	for range n {
		d, err := claim()
		if err != nil {
			return sample{}, err
		}
		lat = append(lat, d)
	}
	db1 := pidsCPU(pids)
	slices.Sort(lat)
	return sample{p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), dbCPU: (db1 - db0) / time.Duration(n)}, nil
}

// queue inserts n pending jobs of the account, created over the last
// minute.
func queue(ctx context.Context, db *persistence.DB, accountID, policyID string, n int) error {
	d := sqliteSQL
	var now any = time.Now().UTC().UnixMicro()
	if db.Dialect == persistence.Postgres {
		d, now = postgresSQL, time.Now().UTC()
	}
	// created spreads the jobs over the last minute: 1/1440 of a day.
	q := `INSERT INTO jobs (id, account_id, job_type, status, policy_id, policy_key, threshold, input, created, updated)
		SELECT ` + d.uuid7("t", "r") + `, ?, 'JOB_TYPE_STANDARD', 'pending', ?, 'bench', 0.5,
			'[{"kind":"text","text":"queued"}]', t, t
		FROM (SELECT ` + d.created + ` AS t, ` + d.random + ` AS r FROM ` + d.series + `) s`
	_, err := db.ExecContext(ctx, db.Rebind(q), accountID, policyID, now, 1.0/1440, n, 1, n)
	return err
}
