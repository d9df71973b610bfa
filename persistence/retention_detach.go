package persistence

// Dropping a day partition without stalling live requests. Removing a
// partition needs the parent table's ACCESS EXCLUSIVE lock (a plain DETACH
// or DROP), and a DDL statement waiting for that lock queues every later
// request on the table behind it: one drop waiting on a long query stalls
// all traffic for as long as it waits. So each partition is detached on
// its own, in its own statement, under a short lock_timeout, and retried
// after a backoff when it times out: a live request waits at most one
// lock_timeout per attempt, and no lock of an earlier table is held while
// waiting for the next. Only the detached table (which no request can
// reach any more) is dropped. Where the parent has no default partition,
// DETACH ... CONCURRENTLY takes no lock that blocks requests at all;
// PostgreSQL refuses it when a default partition exists.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ddlRetry is how partition DDL waits for its locks.
type ddlRetry struct {
	// lockTimeout bounds one attempt's wait for a lock, and so how long a
	// request queued behind the DDL waits.
	lockTimeout time.Duration
	// attempts before the day is left to the next sweep.
	attempts int
	// backoff is the first pause between attempts; it doubles up to
	// maxBackoff, with jitter so that replicas do not retry in step.
	backoff, maxBackoff time.Duration
}

// defaultDDLRetry keeps a request's extra wait well under a synchronous
// job's latency and keeps trying for about a minute per partition.
var defaultDDLRetry = ddlRetry{lockTimeout: 50 * time.Millisecond, attempts: 40,
	backoff: 50 * time.Millisecond, maxBackoff: 2 * time.Second}

// SetPartitionLockTimeout sets how long one attempt of partition DDL waits
// for its table lock (default 50ms), and so the longest a live request
// waits behind it.
func (s *Retention) SetPartitionLockTimeout(d time.Duration) {
	if d > 0 {
		s.ddl.lockTimeout = d
	}
}

// errDDLBusy is partition DDL that timed out on every attempt.
var errDDLBusy = errors.New("persistence: partition DDL gave up waiting for its lock")

// execDDL runs stmt on conn, again after a backoff while it times out on a
// lock (conn's lock_timeout is set).
func (s *Retention) execDDL(ctx context.Context, conn *sqlx.Conn, stmt string) error {
	return s.retryLocked(ctx, func() error {
		_, err := conn.ExecContext(ctx, stmt)
		return err
	})
}

// retryLocked runs fn, again after a backoff while it times out on a lock;
// errDDLBusy when every attempt did.
func (s *Retention) retryLocked(ctx context.Context, fn func() error) error {
	pause := s.ddl.backoff
	for attempt := 1; ; attempt++ {
		err := fn()
		if !isLockTimeout(err) {
			return err
		}
		if attempt >= s.ddl.attempts {
			return errDDLBusy
		}
		t := time.NewTimer(pause/2 + rand.N(pause/2+1))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		pause = min(2*pause, s.ddl.maxBackoff)
	}
}

// withPartitionConn runs fn on one connection holding the partition lock
// (session level: DETACH CONCURRENTLY cannot run in a transaction) with
// the DDL lock_timeout, both undone before the connection goes back to
// the pool.
func (s *Retention) withPartitionConn(ctx context.Context, fn func(conn *sqlx.Conn) error) error {
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return TranslateError(err)
	}
	defer conn.Close()
	var schema string
	if err := conn.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		return TranslateError(err)
	}
	key := partitionLockKey(schema)
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return TranslateError(err)
	}
	// A fresh context: the lock and the setting must be undone even when
	// ctx is done, or the pooled connection would keep them.
	undo := context.WithoutCancel(ctx)
	defer func() { _, _ = conn.ExecContext(undo, `SELECT pg_advisory_unlock($1)`, key) }()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`SET lock_timeout = '%dms'`, s.ddl.lockTimeout.Milliseconds())); err != nil {
		return TranslateError(err)
	}
	defer func() { _, _ = conn.ExecContext(undo, `RESET lock_timeout`) }()
	return fn(conn)
}

// partitionState is where a day partition stands.
type partitionState struct {
	Exists        bool  `db:"present"`
	Attached      bool  `db:"attached"`
	DetachPending bool  `db:"detach_pending"`
	ParentDefault bool  `db:"parent_default"`
	Rows          int64 `db:"rows"`
}

// stateOf reads name's state as a partition of parent.
func stateOf(ctx context.Context, conn *sqlx.Conn, parent, name string) (partitionState, error) {
	var st partitionState
	err := conn.GetContext(ctx, &st, `
		SELECT to_regclass($2) IS NOT NULL AS present,
			i.inhrelid IS NOT NULL AS attached,
			COALESCE(i.inhdetachpending, false) AS detach_pending,
			COALESCE((SELECT partdefid <> 0 FROM pg_partitioned_table WHERE partrelid = to_regclass($1)), false) AS parent_default,
			COALESCE((SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass($2)), 0) AS rows
		FROM (SELECT 1) one
		LEFT JOIN pg_inherits i ON i.inhrelid = to_regclass($2) AND i.inhparent = to_regclass($1)`, parent, name)
	return st, err
}

// detachAndDrop removes name, a partition of parent, and returns its rows
// (estimated from the statistics when PostgreSQL has them). A partition
// left half-way by an earlier sweep (detached, or its concurrent detach
// interrupted) is finished; a missing one is 0 rows.
func (s *Retention) detachAndDrop(ctx context.Context, conn *sqlx.Conn, parent, name string) (int64, error) {
	st, err := stateOf(ctx, conn, parent, name)
	if err != nil || !st.Exists {
		return 0, err
	}
	qp, qn := pq.QuoteIdentifier(parent), pq.QuoteIdentifier(name)
	rows := st.Rows
	if rows < 0 { // never analysed: count
		if err := conn.GetContext(ctx, &rows, `SELECT count(*) FROM `+qn); err != nil {
			return 0, err
		}
	}
	switch {
	case st.DetachPending:
		err = s.execDDL(ctx, conn, `ALTER TABLE `+qp+` DETACH PARTITION `+qn+` FINALIZE`)
	case st.Attached && !st.ParentDefault:
		err = s.execDDL(ctx, conn, `ALTER TABLE `+qp+` DETACH PARTITION `+qn+` CONCURRENTLY`)
	case st.Attached:
		err = s.execDDL(ctx, conn, `ALTER TABLE `+qp+` DETACH PARTITION `+qn)
	}
	if err != nil {
		return 0, err
	}
	return rows, s.execDDL(ctx, conn, `DROP TABLE IF EXISTS `+qn)
}
