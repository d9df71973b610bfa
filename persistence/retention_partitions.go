package persistence

// Day partitions of the PostgreSQL history tables (migration 00094 and
// docs/operations.md, "Retention"). Ids are UUIDv7 text, time first: the
// first 48 bits are the creation time in milliseconds, written as the first
// 12 hex digits ("xxxxxxxx-xxxx"). The partition key columns are COLLATE
// "C", so text order is byte order and a day is the id range from its first
// millisecond's 13-character prefix to the next day's. Ids of any other form
// (tests' "job-1", a v4 fallback) and days without a partition land in each
// table's default partition, which expiry empties with bounded DELETEs.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/contenteval/contenteval/domain"
)

// partitionedTable is one history table partitioned by day.
type partitionedTable struct {
	name string
	// prefix comes before the UUIDv7 in the key ("msg_" for webhook events).
	prefix string
}

// jobPartitionTables are partitioned by the job id (jobs by its own), so a
// day's job and every row of it drop together; children first, the order
// in which a day is dropped.
var jobPartitionTables = []partitionedTable{
	{name: "shadow_results"}, {name: "shadow_evaluations"}, {name: "label_hits"},
	{name: "feedback_annotations"}, {name: "job_results"}, {name: "jobs"},
}

// webhookPartitionTable is the webhook outbox, partitioned by its event id
// ("msg_" and a UUIDv7); it expires on its own, shorter, schedule.
var webhookPartitionTable = partitionedTable{name: "webhook_events", prefix: "msg_"}

// dayKeyPrefix is the first 13 characters of a UUIDv7 made at t's first
// millisecond: the lower bound of t's day's partition.
func dayKeyPrefix(day time.Time) string {
	ms := uint64(day.UnixMilli()) & (1<<48 - 1)
	h := fmt.Sprintf("%012x", ms)
	return h[:8] + "-" + h[8:]
}

// utcDay is the start of t's UTC day.
func utcDay(t time.Time) time.Time {
	return time.Date(t.UTC().Year(), t.UTC().Month(), t.UTC().Day(), 0, 0, 0, 0, time.UTC)
}

// partitionName is table's partition of day.
func partitionName(table string, day time.Time) string {
	return table + "_p" + day.Format("20060102")
}

// partitionDay parses the day of a partition name of table; false for the
// default partition or a name not of this form.
func partitionDay(table, name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, table+"_p")
	if !ok || !dayDigits.MatchString(rest) {
		return time.Time{}, false
	}
	d, err := time.Parse("20060102", rest)
	return d, err == nil
}

var dayDigits = regexp.MustCompile(`^[0-9]{8}$`)

// partitionLockKey is the advisory lock under which partitions of this
// schema are created and dropped: replicas take turns instead of racing
// on CREATE TABLE (whose IF NOT EXISTS is not safe against a concurrent
// creator: both can pass the check, and one fails on the catalog).
func partitionLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("contenteval/partitions/" + schema))
	return int64(h.Sum64())
}

// partitionTx runs fn in a transaction holding the partition lock, with
// the DDL lock_timeout (retention_detach.go): attaching a partition locks
// the default partition, and requests on it queue behind the DDL while it
// waits.
func (s *Retention) partitionTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		var schema string
		if err := tx.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, partitionLockKey(schema)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = '%dms'`, s.ddl.lockTimeout.Milliseconds())); err != nil {
			return err
		}
		return fn(tx)
	})
}

// EnsurePartitions creates the missing day partitions from..to of every
// partitioned table, one partition per transaction. A day whose rows
// already sit in a default partition (no partition existed when they were
// written) is left there: creating it would fail, and expiry deletes
// those rows in batches. Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Retention) EnsurePartitions(ctx context.Context, from, to time.Time) (domain.PartitionSweep, error) {
	var sweep domain.PartitionSweep
	if s.db.Dialect != Postgres {
		return sweep, nil
	}
	tables := append(append([]partitionedTable{}, jobPartitionTables...), webhookPartitionTable)
	firstAttached := utcDay(from).AddDate(0, 0, attachDaysAhead)
days:
	for day := utcDay(from); !day.After(to); day = day.AddDate(0, 0, 1) {
		// A day that has begun, or may have by another replica's clock or
		// an id made a little ahead, can be written while its partition is
		// made: see createDayPartition.
		ahead := !day.Before(firstAttached)
		for _, t := range tables {
			created := false
			err := s.retryLocked(ctx, func() error {
				return s.partitionTx(ctx, func(tx *sqlx.Tx) error {
					var err error
					created, err = createDayPartition(ctx, tx, t, day, ahead)
					return err
				})
			})
			if isCheckViolation(err) {
				continue
			}
			if errors.Is(err, errDDLBusy) {
				if !ahead {
					// Its rows go to the default partition meanwhile; the
					// days ahead do not need the lock this one waited for.
					continue days
				}
				return sweep, nil // the rest: the next sweep makes them
			}
			if err != nil {
				return sweep, err
			}
			if created {
				sweep.Created++
			}
		}
	}
	return sweep, nil
}

// attachDaysAhead is how many days after the sweep's own day a day must be
// for its partitions to be attached (createDayPartition). A server that
// runs sweeps every day makes each day this far ahead, so only a first
// start (or one after days down) creates today's and tomorrow's under the
// parent's lock, and the server does that before it listens.
const attachDaysAhead = 2

// createDayPartition creates t's partition of day unless it exists. A day
// ahead is made as a table of its own and then attached: CREATE TABLE ...
// PARTITION OF would take the parent's ACCESS EXCLUSIVE lock, which waits
// for every open transaction on the table and queues every later request
// behind it, where ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE, which
// inserts, updates and reads do not conflict with (it still locks the
// default partition, which requests reach only when a query is not pruned
// to its days). Its bound is a CHECK constraint of the new table while it
// is attached, so that attaching does not scan it. A day nearer than
// attachDaysAhead is created the old way: a row of it being inserted
// concurrently was routed
// to the default partition by the partitions it saw, and once the attach
// commits PostgreSQL refuses that row (the default partition's constraint
// changed under it), where the exclusive lock waits for the insert and
// then finds the day's rows in the default partition, which keeps them.
func createDayPartition(ctx context.Context, tx *sqlx.Tx, t partitionedTable, day time.Time, ahead bool) (bool, error) {
	name := partitionName(t.name, day)
	var exists bool
	if err := tx.GetContext(ctx, &exists, `SELECT to_regclass($1) IS NOT NULL`, name); err != nil {
		return false, err
	}
	if exists {
		return false, nil
	}
	if !ahead {
		lo, hi := t.prefix+dayKeyPrefix(day), t.prefix+dayKeyPrefix(day.AddDate(0, 0, 1))
		_, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE %s PARTITION OF %s FOR VALUES FROM (%s) TO (%s)`,
			pq.QuoteIdentifier(name), pq.QuoteIdentifier(t.name), pq.QuoteLiteral(lo), pq.QuoteLiteral(hi)))
		return err == nil, err
	}
	var key string
	if err := tx.GetContext(ctx, &key, `SELECT pg_get_partkeydef(to_regclass($1))`, t.name); err != nil {
		return false, err
	}
	column, ok := strings.CutPrefix(key, "RANGE (")
	column, ok2 := strings.CutSuffix(column, ")")
	if !ok || !ok2 || !partitionKeyColumn.MatchString(column) {
		return false, fmt.Errorf("persistence: %s is not partitioned by the range of one column: %q", t.name, key)
	}
	qn, qt := pq.QuoteIdentifier(name), pq.QuoteIdentifier(t.name)
	lo, hi := pq.QuoteLiteral(t.prefix+dayKeyPrefix(day)), pq.QuoteLiteral(t.prefix+dayKeyPrefix(day.AddDate(0, 0, 1)))
	for _, stmt := range []string{
		fmt.Sprintf(`CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)`, qn, qt),
		fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s >= %s AND %s < %s)`,
			qn, pq.QuoteIdentifier(name+"_bound"), column, lo, column, hi),
		fmt.Sprintf(`ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%s) TO (%s)`, qt, qn, lo, hi),
		// The partition constraint now says the same.
		fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s`, qn, pq.QuoteIdentifier(name+"_bound")),
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, err
		}
	}
	return true, nil
}

// partitionKeyColumn is the partition key of a history table as
// pg_get_partkeydef names it: one plain column.
var partitionKeyColumn = regexp.MustCompile(`^[a-z_]+$`)

// isCheckViolation reports a day that cannot have a partition of its own:
// a default partition holds rows of it (check_violation), or the legacy
// partition of migration 00094 covers it (invalid_object_definition).
func isCheckViolation(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && (pe.Code == "23514" || pe.Code == "42P17")
}

// DropPartitions drops whole days of history: the job partitions of days
// ending at or before jobsBefore that hold no pending or running job, and
// the webhook partitions of days ending at or before webhooksBefore that
// hold no undelivered event. Codes: UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Retention) DropPartitions(ctx context.Context, jobsBefore, webhooksBefore time.Time) (domain.PartitionSweep, error) {
	var sweep domain.PartitionSweep
	if s.db.Dialect != Postgres {
		return sweep, nil
	}
	groups := []struct {
		tables []partitionedTable
		before time.Time
		live   string
	}{
		{jobPartitionTables, jobsBefore, `status IN ('pending', 'running')`},
		{[]partitionedTable{webhookPartitionTable}, webhooksBefore, `delivered_at IS NULL AND failed_at IS NULL`},
	}
	for _, g := range groups {
		if g.before.IsZero() {
			continue
		}
		head := g.tables[len(g.tables)-1]
		days, err := s.partitionDays(ctx, head.name)
		if err != nil {
			return sweep, err
		}
		for _, day := range days {
			if day.AddDate(0, 0, 1).After(g.before) {
				break
			}
			rows, dropped, err := s.dropDay(ctx, g.tables, day, g.live)
			if err != nil {
				return sweep, err
			}
			if dropped {
				sweep.Dropped++
				sweep.Rows += rows
			}
		}
	}
	return sweep, nil
}

// partitionDays lists the days of table's partitions, oldest first.
func (s *Retention) partitionDays(ctx context.Context, table string) ([]time.Time, error) {
	var names []string
	err := s.db.SelectContext(ctx, &names, `
		SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1) ORDER BY c.relname`, table)
	if err != nil {
		return nil, TranslateError(err)
	}
	var days []time.Time
	for _, n := range names {
		if d, ok := partitionDay(table, n); ok {
			days = append(days, d)
		}
	}
	return days, nil
}

// dropDay removes the partitions of day of tables (the last one holding
// the rows that must not be live), one at a time and children first,
// unless live work is there; it returns their rows. A day whose DDL keeps
// timing out on its locks is left, perhaps in part, to the next sweep,
// which finishes it.
func (s *Retention) dropDay(ctx context.Context, tables []partitionedTable, day time.Time, live string) (int64, bool, error) {
	var rows int64
	err := s.withPartitionConn(ctx, func(conn *sqlx.Conn) error {
		head := partitionName(tables[len(tables)-1].name, day)
		var busy bool
		if err := conn.GetContext(ctx, &busy, `SELECT to_regclass($1) IS NOT NULL`, head); err != nil {
			return err
		}
		if busy {
			if err := conn.GetContext(ctx, &busy, `SELECT EXISTS (SELECT 1 FROM `+pq.QuoteIdentifier(head)+` WHERE `+live+`)`); err != nil {
				return err
			}
		}
		if busy {
			return errDayBusy
		}
		for _, t := range tables {
			n, err := s.detachAndDrop(ctx, conn, t.name, partitionName(t.name, day))
			if err != nil {
				return err
			}
			rows += n
		}
		if tables[len(tables)-1].name == "jobs" {
			// The day's version metric counts go with its jobs.
			for _, t := range countTables {
				if _, err := conn.ExecContext(ctx, `DELETE FROM `+t.name+` WHERE `+t.bucket+` >= $1 AND `+t.bucket+` < $2`,
					day, day.AddDate(0, 0, 1)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if errors.Is(err, errDayBusy) || errors.Is(err, errDDLBusy) {
		return 0, false, nil // the next sweep tries again
	}
	if err != nil {
		return 0, false, TranslateError(err)
	}
	return rows, true, nil
}

// errDayBusy is a day holding live work.
var errDayBusy = errors.New("persistence: the day holds live work")

// isLockTimeout reports a PostgreSQL lock_not_available (lock_timeout).
func isLockTimeout(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "55P03"
}

// OldestPartitionDay returns the oldest day that has a jobs partition;
// nil on SQLite or when there is none.
func (s *Retention) OldestPartitionDay(ctx context.Context) (*time.Time, error) {
	if s.db.Dialect != Postgres {
		return nil, nil
	}
	days, err := s.partitionDays(ctx, "jobs")
	if err != nil || len(days) == 0 {
		return nil, err
	}
	return &days[0], nil
}
