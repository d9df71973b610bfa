package persistence

// The durable job queue: claiming (fairly across accounts, docs/operations.md#scaling) and
// the lease transitions of a claimed job. jobs.go holds the rows,
// job_finish.go the finished-job write path.

import (
	"context"
	"fmt"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/traces"
	"github.com/jmoiron/sqlx"
)

// claimable is the condition of a job a worker may claim at now, above
// the queue's floor on PostgreSQL (queueSQL; its arguments: floorBound.at(now)).
const claimable = `({floor}(status = 'pending' OR (status = 'running' AND lease_expires_at < ?)))`

// claimableByID is claimable for a statement that names its job by id,
// which finds its partition: without the floor, and with the status read
// through lower() (a no-op on its lower-case values) so that the condition
// does not imply the predicate of the queue's partial indexes. When it
// did, PostgreSQL, on statistics taken before a backlog arrived, chose
// jobs_account_queue_idx for the UPDATE of one job and read all of it (the
// id is its last column): 12,000-15,000 pages a job at 100,000 queued,
// where the primary key is a probe of 3.
const claimableByID = `(lower(status) = 'pending' OR (lower(status) = 'running' AND lease_expires_at < ?))`

// claimableJ is claimable on the alias j.
const claimableJ = `({floorJ}(j.status = 'pending' OR (j.status = 'running' AND j.lease_expires_at < ?)))`

// queuedAccountsSQL lists the accounts with claimable jobs, each with its
// running work (jobs under a live lease, any owner's, then the claimer's
// only), how many jobs it has to claim (counted up to the claim's limit),
// and the creation time of its oldest claimable job in each lane.
// The accounts are found by a loose index scan of jobs_account_queue_idx
// (one probe per account, each the next account_id after the previous),
// not by reading the queue: one account's backlog of any size costs one
// probe. The running counts read jobs_running_idx, the oldest jobs one
// probe per lane of jobs_account_queue_idx. Every read is bounded by the
// queue's floor on PostgreSQL (job_queue_floor.go). Its arguments are
// queuedAccountsArgs.
//
// Every probe of the queue is ordered by the whole key of
// jobs_account_queue_idx, though only its first columns matter to the
// result: that order is what makes the partial index the plan. Given a
// bare LIMIT (the depth count) or an order that jobs_account_created_idx
// also serves (the oldest jobs, the loose scan), PostgreSQL on fresh
// statistics read an account's backlog by a sequential scan (47 ms per
// claim at 100,000 queued jobs) or walked its finished jobs in the
// history-sized index.
//
// The queue statements are prepared once per connection (planning costs
// more than running them on a short queue), and their LIMITs are bound as
// "? + 0", not "?": SQLite plans with the value of a bare bound LIMIT and so
// re-prepares the statement whenever it changes, which on a queue of short
// jobs (claims of 1 to 8 jobs in turn) cost more CPU than the fair read
// itself.
const queuedAccountsSQL = queuedAccountsCTE + `
	SELECT q.account_id,
		(SELECT COUNT(*) FROM jobs j
		 WHERE j.account_id = q.account_id AND {floorJ}j.status = 'running' AND j.lease_expires_at >= ?) AS running,
		(SELECT COUNT(*) FROM jobs j
		 WHERE j.account_id = q.account_id AND {floorJ}j.status = 'running' AND j.lease_expires_at >= ? AND j.lease_owner = ?) AS mine,
		(SELECT j.created FROM jobs j
		 WHERE j.account_id = q.account_id AND j.status IN ('pending', 'running') AND j.expedited = TRUE AND ` + claimableJ + `
		 ORDER BY j.expedited DESC, j.created, j.id LIMIT 1) AS oldest_expedited,
		(SELECT j.created FROM jobs j
		 WHERE j.account_id = q.account_id AND j.status IN ('pending', 'running') AND j.expedited = FALSE AND ` + claimableJ + `
		 ORDER BY j.expedited DESC, j.created, j.id LIMIT 1) AS oldest_standard,
		(SELECT COUNT(*) FROM (SELECT 1 FROM jobs j
		 WHERE j.account_id = q.account_id AND j.status IN ('pending', 'running') AND ` + claimableJ + `
		 ORDER BY j.expedited DESC, j.created, j.id LIMIT ? + 0) d) AS depth
	FROM queued q WHERE q.account_id IS NOT NULL`

// queuedAccountsCTE is the loose scan of queuedAccountsSQL: the accounts
// with claimable jobs (and a NULL row that ends the recursion). It takes
// two arguments, each floorBound.at(now).
const queuedAccountsCTE = `
	WITH RECURSIVE queued (account_id) AS (
		SELECT (SELECT j.account_id FROM jobs j
		        WHERE j.status IN ('pending', 'running') AND ` + claimableJ + `
		        ORDER BY j.account_id, j.expedited DESC, j.created, j.id LIMIT 1)
		UNION ALL
		SELECT (SELECT j.account_id FROM jobs j
		        WHERE j.status IN ('pending', 'running') AND ` + claimableJ + ` AND j.account_id > q.account_id
		        ORDER BY j.account_id, j.expedited DESC, j.created, j.id LIMIT 1)
		FROM queued q WHERE q.account_id IS NOT NULL
	)`

var (
	queuedAccountsStmt = floored(queuedAccountsSQL)
	pickAccountStmt    = floored(pickAccountSQL)
	claimAccountStmt   = floored(claimAccountSQL)
)

func queuedAccountsArgs(b floorBound, owner string, now time.Time, limit int) []any {
	return b.args(b.at(now), b.at(now), b.at(now), b.at(now), owner, b.at(now), b.at(now), b.at(now), limit)
}

// claimAccountSQL claims up to a number of one account's claimable jobs,
// expedited first, then oldest. The candidates are picked in a CTE:
// PostgreSQL may run an IN (subquery) once per outer row, and with SKIP
// LOCKED each run can pick different rows, claiming more than asked. A
// locking CTE runs once. %s is the row-lock clause (none on SQLite, whose transaction holds the
// write lock).
const claimAccountSQL = `
	WITH picked AS (
		SELECT id FROM jobs
		WHERE account_id = ? AND status IN ('pending', 'running') AND ` + claimable + `
		ORDER BY expedited DESC, created, id
		LIMIT ? + 0%s
	)
	UPDATE jobs
	SET status = 'running', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1,
	    started = COALESCE(started, ?), updated = ?
	WHERE id IN (SELECT id FROM picked) AND ` + claimable + `
	RETURNING ` + jobColumns + `, ` + jobInputColumns

// pickAccountSQL and claimOneSQL are the claim on PostgreSQL: the account's
// candidates are locked first, then each is updated by its id. One UPDATE
// of all of them (claimAccountSQL) leaves the planner free to join the
// picked ids against the whole queue, and on statistics taken before a
// backlog arrived it does: 100,026 rows read to claim 8 at 100,000 queued
// (bench/results/history.md). An UPDATE by id is a probe of one day's
// primary key, whatever the statistics say.
const pickAccountSQL = `
	SELECT id FROM jobs
	WHERE account_id = ? AND status IN ('pending', 'running') AND ` + claimable + `
	ORDER BY expedited DESC, created, id
	LIMIT ? + 0 FOR UPDATE SKIP LOCKED`

const claimOneSQL = `
	UPDATE jobs
	SET status = 'running', lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1,
	    started = COALESCE(started, ?), updated = ?
	WHERE id = ? AND ` + claimableByID + `
	RETURNING ` + jobColumns + `, ` + jobInputColumns

// queuedAccount is an account with claimable jobs, as a claim sees it.
type queuedAccount struct {
	ID              string    `db:"account_id"`
	Running         int       `db:"running"` // jobs under a live lease, any owner's
	Mine            int       `db:"mine"`    // of those, the claimer's
	OldestExpedited scanTime  `db:"oldest_expedited"`
	OldestStandard  scanTime  `db:"oldest_standard"`
	Depth           int       `db:"depth"` // claimable jobs, up to the claim's limit
	oldest          time.Time // the older of the two
}

// ClaimJobs claims up to limit jobs for owner, shared fairly across
// accounts (domain.JobStore.ClaimJobs; docs/operations.md#scaling).
//
// The accounts with claimable jobs and their running work are read first;
// that read is also what an idle worker polling an empty queue costs, so it
// takes no write lock (on SQLite it runs before the transaction) nor row
// locks. shareSlots then decides how many jobs each account gets, and each
// account's share is claimed by one guarded UPDATE in one transaction. An
// account that gives fewer jobs than its share (another claimer took them
// since the read) is left out and the rest shared again.
//
// Several replicas claim concurrently on PostgreSQL: each sees the others'
// committed claims only, so two claims at the same instant may both favour
// the same account; the next claims even it out. Exactly-once does not
// depend on the read: every UPDATE re-checks that the job is claimable, and
// SKIP LOCKED keeps concurrent claimers off each other's rows.
// Codes: ABORTED, UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ClaimJobs(ctx context.Context, owner string, now, leaseUntil time.Time, limit, accountMax int) ([]*domain.Job, error) {
	now, leaseUntil = StoredTime(now), StoredTime(leaseUntil)
	if limit <= 0 {
		return nil, nil
	}
	// The statements are prepared before a transaction holds a
	// connection: preparing on the pool from inside one could wait forever
	// for a connection the other claimers' transactions hold.
	d := s.db.Dialect
	read, err := s.db.prepared(ctx, queuedAccountsStmt.on(d))
	if err != nil {
		return nil, TranslateError(err)
	}
	var rows []jobRow
	if d == Postgres {
		if err := s.raiseQueueFloor(ctx, now); err != nil {
			return nil, TranslateError(err)
		}
		pick, err := s.db.prepared(ctx, pickAccountStmt.on(d))
		if err != nil {
			return nil, TranslateError(err)
		}
		one, err := s.db.prepared(ctx, s.withTrace(claimOneSQL))
		if err != nil {
			return nil, TranslateError(err)
		}
		err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
			// The queue statements are written for index probes: the loose
			// scan stops at each account's first entry, a share reads its
			// first n. On statistics taken before a burst of jobs arrived
			// (autovacuum analyses a minute later at best), the planner
			// believes the queue holds a few rows and builds a bitmap of all
			// of it for every probe instead: 1.5 ms per read on a queue of
			// 2,000 jobs (0.19 ms as probes), growing with the backlog.
			// The same round trip reads the queue's floor.
			var floor string
			if err := tx.GetContext(ctx, &floor, queuePlanningFloorSQL); err != nil {
				return err
			}
			s.db.queueFloor.seen(floor)
			b := floorBound{d, floor}
			var accounts []*queuedAccount
			if err := tx.StmtxContext(ctx, read).SelectContext(ctx, &accounts, queuedAccountsArgs(b, owner, now, limit)...); err != nil {
				return err
			}
			txPick, txOne := tx.StmtxContext(ctx, pick), tx.StmtxContext(ctx, one)
			claim := func(accountID string, n int) ([]jobRow, error) {
				var ids []string
				if err := txPick.SelectContext(ctx, &ids, b.args(accountID, b.at(now), n)...); err != nil {
					return nil, err
				}
				got := make([]jobRow, 0, len(ids))
				for _, id := range ids {
					var r []jobRow
					if err := txOne.SelectContext(ctx, &r, owner, leaseUntil, now, now, id, now); err != nil {
						return nil, err
					}
					got = append(got, r...)
				}
				return got, nil
			}
			rows, err = claimShares(accounts, limit, accountMax, claim)
			return err
		})
		if err != nil {
			return nil, err
		}
		return toJobs(rows)
	}
	b := floorBound{d: d}
	claimStmt, err := s.db.prepared(ctx, s.withTrace(fmt.Sprintf(claimAccountStmt.on(d), "")))
	if err != nil {
		return nil, TranslateError(err)
	}
	var accounts []*queuedAccount
	if err := read.SelectContext(ctx, &accounts, queuedAccountsArgs(b, owner, now, limit)...); err != nil {
		return nil, TranslateError(err)
	}
	if len(accounts) == 0 {
		return nil, nil
	}
	err = s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		claim := tx.StmtxContext(ctx, claimStmt)
		rows, err = claimShares(accounts, limit, accountMax, func(accountID string, n int) ([]jobRow, error) {
			var got []jobRow
			err := claim.SelectContext(ctx, &got, b.args(accountID, b.at(now), n, owner, leaseUntil, now, now, b.at(now))...)
			return got, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return toJobs(rows)
}

// queuePlanningSQL sets, for the rest of a PostgreSQL transaction, how the
// queue statements are planned (see ClaimJobs). Sorts are discouraged
// because the jobs table is partitioned by day (migration 00094): a
// partition made ahead of time has no statistics, and on them the planner
// would sort an account's whole backlog where a Merge Append of the
// partitions' indexes reads only the first rows. The prepared statements
// keep their generic plans: bounded by the floor, a parameter, PostgreSQL
// would otherwise plan every claim anew (the custom plan prunes the days
// below the floor, so it prices below the generic one): 3 ms of planning a
// claim on a 38-day history. The generic plan prunes the same days when it
// starts, from the bound values.
const queuePlanningSQL = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true),
	set_config('plan_cache_mode', 'force_generic_plan', true)`

// queuePlanningFloorSQL is queuePlanningSQL that also returns the queue's
// floor (job_queue_floor.go): one round trip for both.
const queuePlanningFloorSQL = `SELECT COALESCE((SELECT floor FROM job_queue_floor WHERE id = 1), '')
	FROM (` + queuePlanningSQL + `) p`

// withTrace is a claim statement that, with tracing on, also returns the
// jobs' trace context, which the worker continues; off, it reads nothing
// more.
func (s *Jobs) withTrace(q string) string {
	if traces.Enabled() {
		q += ", trace_parent, trace_state"
	}
	return q
}

// claimShares claims, with claim (up to n of an account's jobs, in the
// claim's transaction), the shares shareSlots gives accounts of limit
// slots, sharing again what an account could not fill.
func claimShares(accounts []*queuedAccount, limit, accountMax int, claim func(accountID string, n int) ([]jobRow, error)) ([]jobRow, error) {
	for _, a := range accounts {
		a.oldest = a.OldestStandard.Time
		if e := a.OldestExpedited.Time; !e.IsZero() && (a.oldest.IsZero() || e.Before(a.oldest)) {
			a.oldest = e
		}
	}
	var rows []jobRow
	free := limit
	for free > 0 && len(accounts) > 0 {
		shares := shareSlots(accounts, free, accountMax)
		again := false
		for i, n := range shares {
			if n == 0 {
				continue
			}
			got, err := claim(accounts[i].ID, n)
			if err != nil {
				return nil, err
			}
			rows = append(rows, got...)
			free -= len(got)
			accounts[i].Running += len(got)
			accounts[i].Mine += len(got)
			accounts[i].Depth -= len(got)
			if len(got) < n {
				accounts[i].Depth = 0
				again = true
			}
		}
		if !again {
			break
		}
	}
	return rows, nil
}

// shareSlots returns how many of free slots each account gets (by index of
// accounts), given one at a time: to the account with the least running
// work, counting what it got already; ties to the account whose oldest
// claimable job is oldest, then to the smaller id. No account gets more
// than its Depth. While another account still has jobs left without a slot,
// an account holding accountMax of the claimer's slots gets no more
// (accountMax 0: no cap).
func shareSlots(accounts []*queuedAccount, free, accountMax int) []int {
	shares := make([]int, len(accounts))
	waiting := 0 // accounts with jobs left without a slot
	for _, a := range accounts {
		if a.Depth > 0 {
			waiting++
		}
	}
	for range free {
		best := -1
		for i, a := range accounts {
			if shares[i] >= a.Depth {
				continue
			}
			if accountMax > 0 && a.Mine+shares[i] >= accountMax && waiting > 1 {
				continue
			}
			if best < 0 || fairer(a, shares[i], accounts[best], shares[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		shares[best]++
		if shares[best] == accounts[best].Depth {
			waiting--
		}
	}
	return shares
}

// fairer reports whether a (with n slots given in this claim) comes before
// b (with m).
func fairer(a *queuedAccount, n int, b *queuedAccount, m int) bool {
	if ra, rb := a.Running+n, b.Running+m; ra != rb {
		return ra < rb
	}
	if !a.oldest.Equal(b.oldest) {
		return a.oldest.Before(b.oldest)
	}
	return a.ID < b.ID
}

// scanTime scans a nullable time that may arrive as a time.Time or, from
// an SQLite expression (which carries no column type for the driver to
// convert), as the stored integer of unix microseconds. NULL is the zero
// time.
type scanTime struct{ time.Time }

func (t *scanTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		t.Time = time.Time{}
	case time.Time:
		t.Time = v.UTC()
	case int64:
		t.Time = time.UnixMicro(v).UTC()
	default:
		return fmt.Errorf("persistence: cannot scan %T as a time", src)
	}
	return nil
}

// guarded runs a transition UPDATE whose WHERE requires the job to be
// running under owner; no row updated means owner lost it: ABORTED.
func guarded(ctx context.Context, tx *sqlx.Tx, id string, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, tx.Rebind(query), args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return domain.Errorf(domain.Aborted, "job %q is no longer held by this worker", id)
	}
	return nil
}

// RenewLease extends owner's lease to until. Codes: ABORTED when owner no
// longer holds the job; UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) RenewLease(ctx context.Context, id, owner string, until, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		return guarded(ctx, tx, id, `
			UPDATE jobs SET lease_expires_at = ?
			WHERE id = ? AND status = 'running' AND lease_owner = ?`,
			StoredTime(until), id, owner)
	})
}

// ReleaseJob puts a job owner holds back in the queue. Codes: ABORTED;
// UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Jobs) ReleaseJob(ctx context.Context, id, owner string, now time.Time) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		return guarded(ctx, tx, id, `
			UPDATE jobs SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, updated = ?
			WHERE id = ? AND status = 'running' AND lease_owner = ?`,
			StoredTime(now), id, owner)
	})
}
