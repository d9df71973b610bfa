package persistence

// The queue's floor on PostgreSQL: a job id at or below every pending or
// running job's. The jobs table is partitioned by day of its UUIDv7 id,
// and the queue's indexes are partial indexes of each partition; a read of
// the queue not bounded by id probes every retained day's index, so a
// claim costs more the more days are kept (1.65 times an empty history's
// at 38 days, bench/results/history.md) though the old days hold finished
// jobs only. Bounded by the floor, PostgreSQL prunes those days when it
// plans the claim.
//
// The invariant, and who keeps it:
//   - A claim raises the floor (raiseQueueFloor, at most once a minute per
//     process) to the lowest id of the pending and running jobs above it,
//     or, when there is none, to the start of the day queueFloorLag before
//     its now, whichever is lower.
//   - A job is written unfinished with an id made from the clock at that
//     moment (domain.NewIDAt), so its id is at or above any floor a claim
//     at the same clock could have set, unless it waited over
//     queueFloorLag/2 between the two. A job whose id is older than that
//     (a resumed batch's, made when its items were recorded), or below the
//     floor this process last saw, or not a UUIDv7, lowers the floor to
//     itself in its own transaction (lowerQueueFloor). The second case
//     covers clocks that disagree within one process (tests write jobs
//     dated days before their claims' clock).
//   - Both take the floor's row lock: a raise computes its minimum only
//     after every transaction that lowered the floor has committed, and a
//     lowering waits for a raise in progress, then lowers what it set.
//     Within a process, a raise also waits for the unfinished jobs being
//     written (queueFloorState.gate), whose check against the floor it
//     last saw would otherwise race with the raise.
//   - Jobs released, yielded or whose lease expired keep their id, which a
//     raise counted while they were running. A job written with the
//     completion of another (a shadow evaluation, Then), however long that
//     one ran, has an id above the finishing job's, which every raise
//     until their common commit counted.
// SQLite's jobs table is one b-tree: it has no floor, and its statements
// carry no bound.

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// queueFloorLag is how far behind a claim's clock the floor may rise at
// most: an unfinished job written with an id up to half of it old needs no
// lowering.
const queueFloorLag = time.Hour

// queueFloorEvery is how often a process tries to raise the floor.
const queueFloorEvery = time.Minute

// queueFloorState is a process's schedule of raises, and the floor its
// last claim read.
type queueFloorState struct {
	// gate is held by a raise, and shared by the transactions writing
	// unfinished jobs (Jobs.CreateJob).
	gate   sync.RWMutex
	mu     sync.Mutex
	raised time.Time // the now of the last attempt; zero before the first
	floor  string
	// afterMin, when set (by tests), runs in a raise between reading the
	// lowest unfinished id and writing the floor, with the row locked.
	afterMin func()
}

// seen records the floor a claim read.
func (s *queueFloorState) seen(floor string) {
	s.mu.Lock()
	s.floor = floor
	s.mu.Unlock()
}

// last is the floor the last claim read ("" before any): what QueueLoad
// bounds its read by, sparing it a round trip. It may be above a floor
// another replica has lowered since, by a job written with an old id;
// QueueLoad then misses that job until the next claim, and the running
// job it answers yields at its next item instead.
func (s *queueFloorState) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.floor
}

// due reports whether a raise is due at now, and if so counts it as made.
// A clock set back (a test's) makes one due at once.
func (s *queueFloorState) due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.raised.IsZero() && now.Sub(s.raised) < queueFloorEvery && !now.Before(s.raised) {
		return false
	}
	s.raised = now
	return true
}

// queueSQL is a queue statement for d: on PostgreSQL each floor marker
// ({floor}, or {floorJ} for the alias j) bounds the job id by a bound
// argument that comes before the marked condition's own (floorBound.at);
// on SQLite the markers are removed.
func queueSQL(d Dialect, q string) string {
	if d == Postgres {
		return strings.NewReplacer("{floorJ}", "j.id >= ? AND ", "{floor}", "id >= ? AND ").Replace(q)
	}
	return strings.NewReplacer("{floorJ}", "", "{floor}", "").Replace(q)
}

// flooredSQL is a queue statement as each dialect runs it, made once
// rather than on every claim.
type flooredSQL struct{ postgres, sqlite string }

func floored(q string) flooredSQL {
	return flooredSQL{postgres: queueSQL(Postgres, q), sqlite: queueSQL(SQLite, q)}
}

func (f flooredSQL) on(d Dialect) string {
	if d == Postgres {
		return f.postgres
	}
	return f.sqlite
}

// floorBound is how a marked condition's arguments are bound on a dialect.
type floorBound struct {
	d     Dialect
	floor string
}

// at is the arguments of a marked condition whose own first argument is
// v: the floor first on PostgreSQL.
func (b floorBound) at(v any) []any {
	if b.d == Postgres {
		return []any{b.floor, v}
	}
	return []any{v}
}

// args flattens a statement's arguments, each either a []any from at or a
// single value.
func (b floorBound) args(parts ...any) []any {
	var out []any
	for _, p := range parts {
		if ps, ok := p.([]any); ok {
			out = append(out, ps...)
		} else {
			out = append(out, p)
		}
	}
	return slices.Clip(out)
}

// raiseQueueFloor raises the floor, if a raise is due at now, to the
// lowest id of the pending and running jobs, bounded by the start of the
// day queueFloorLag before now. A replica raising it already (its row
// locked) is left to it.
func (s *Jobs) raiseQueueFloor(ctx context.Context, now time.Time) error {
	if s.db.Dialect != Postgres || !s.db.queueFloor.due(now) {
		return nil
	}
	top := idTimePrefix(utcDay(now.Add(-queueFloorLag)))
	s.db.queueFloor.gate.Lock()
	defer s.db.queueFloor.gate.Unlock()
	var raised string
	err := s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var floor []string
		if err := tx.SelectContext(ctx, &floor, `SELECT floor FROM job_queue_floor WHERE id = 1 FOR UPDATE SKIP LOCKED`); err != nil || len(floor) == 0 {
			return err
		}
		if floor[0] >= top {
			raised = floor[0]
			return nil
		}
		// The lowest unfinished id below top, read in the order of
		// jobs_account_queue_idx so that each partition's partial index
		// of its unfinished jobs is what is read: the days below the
		// floor are pruned, and an old day's index is empty.
		if _, err := tx.ExecContext(ctx, queuePlanningSQL); err != nil {
			return err
		}
		var lowest sql.NullString
		if err := tx.GetContext(ctx, &lowest, `
			SELECT MIN(id) FROM (
				SELECT id FROM jobs
				WHERE status IN ('pending', 'running') AND id >= $1 AND id < $2
				ORDER BY account_id, expedited DESC, created, id
			) q`, floor[0], top); err != nil {
			return err
		}
		if s.db.queueFloor.afterMin != nil {
			s.db.queueFloor.afterMin()
		}
		raised = top
		if lowest.Valid {
			raised = lowest.String
		}
		if raised <= floor[0] {
			raised = floor[0]
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE job_queue_floor SET floor = $1 WHERE id = 1`, raised)
		return err
	})
	if err == nil && raised != "" {
		s.db.queueFloor.seen(raised)
	}
	return err
}

// lowerQueueFloor lowers the floor, in the transaction that writes j, to
// j's id when j is unfinished and its id is older than j's last change by
// over half of queueFloorLag, or below the floor this process last saw, or
// is not a UUIDv7: a raise may have passed it (see the file's comment). The
// caller holds db.queueFloor.gate shared. On SQLite there is no floor.
func lowerQueueFloor(ctx context.Context, tx *sqlx.Tx, db *DB, j *domain.Job) error {
	if db.Dialect != Postgres || j.Status.Terminal() {
		return nil
	}
	if t, ok := domain.IDTime(j.ID); ok && !t.Before(j.Updated.Add(-queueFloorLag/2)) && j.ID >= db.queueFloor.last() {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE job_queue_floor SET floor = LEAST(floor, $1) WHERE id = 1`, j.ID)
	return err
}
