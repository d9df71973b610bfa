package persistence

import (
	"context"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// listJobsSQL is ListJobs' query. Each filter has an index whose order is
// the page order (created, id descending), so that a page reads about its
// own rows however many jobs the account has and however few match:
// jobs_account_status_created_idx for a status, the partial
// jobs_account_policy_created_idx for a policy (the query repeats its
// predicate), jobs_account_created_idx otherwise; a created window bounds
// the index range of each. SQLite, without statistics, prefers the
// account's created index as soon as the window has both bounds, and then
// reads every job of the window to find the status: it is told.
func listJobsSQL(dialect Dialect, accountID string, f domain.JobFilter, after *domain.JobCursor, limit int) (string, []any) {
	return listJobsSince(dialect, accountID, f, after, nil, limit)
}

// listJobsSince is listJobsSQL of the jobs created at or after since
// (nil: any).
func listJobsSince(dialect Dialect, accountID string, f domain.JobFilter, after *domain.JobCursor, since *time.Time, limit int) (string, []any) {
	where := []string{"account_id = ?", internalJobTypesExcluded}
	args := []any{accountID}
	if f.Status != "" {
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.PolicyID != "" {
		where = append(where, "policy_id = ?", "policy_id <> ''")
		args = append(args, f.PolicyID)
	}
	rangeSQL("created", f.Created, &where, &args)
	rangeSQL("updated", f.Updated, &where, &args)
	rangeSQL("completed", f.Completed, &where, &args)
	createdNotAfter(f, &where, &args)
	if after != nil {
		c := StoredTime(after.Created)
		where = append(where, "(created < ? OR (created = ? AND id < ?))")
		args = append(args, c, c, after.ID)
	}
	lower := f.Created.Start
	if since != nil {
		where = append(where, "created >= ?")
		args = append(args, StoredTime(*since))
		if lower == nil || since.After(*lower) {
			lower = since
		}
	}
	if dialect == Postgres {
		if cond, bounds := jobIDWindow("id", lower, createdUpperBound(f, after)); cond != "" {
			where = append(where, cond)
			args = append(args, bounds...)
		}
	}
	args = append(args, limit)
	from := "jobs"
	if f.Status != "" && dialect == SQLite {
		from = "jobs INDEXED BY jobs_account_status_created_idx"
	}
	return `SELECT ` + jobColumns + ` FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") +
		` ORDER BY created DESC, id DESC LIMIT ?`, args
}

// recentDay is the span ListJobs asks first on PostgreSQL.
const recentDay = 24 * time.Hour

// listJobRows runs ListJobs' query. On PostgreSQL a page whose window
// is longer than a day, or open, is asked first of the last day of its
// window (before its cursor, its window's end, or now), which reads that
// day's partitions only (jobIDWindow); only if that day does not fill the
// page is the rest, older, asked for what is missing. An account's newest
// jobs of a common status fill the page from the first: its cost then
// does not grow with the days kept, where one query walks each retained
// day's index.
func listJobRows(ctx context.Context, db querier, dialect Dialect, accountID string, f domain.JobFilter, after *domain.JobCursor, limit int) ([]jobRow, error) {
	read := func(after *domain.JobCursor, since *time.Time, limit int) ([]jobRow, error) {
		query, args := listJobsSince(dialect, accountID, f, after, since, limit)
		var rows []jobRow
		err := db.SelectContext(ctx, &rows, db.Rebind(query), args...)
		return rows, err
	}
	end := time.Now()
	if bound := createdUpperBound(f, after); bound != nil {
		end = *bound
	}
	split := StoredTime(end.Add(-recentDay))
	if dialect != Postgres || (f.Created.Start != nil && !f.Created.Start.Before(split)) {
		return read(after, nil, limit)
	}
	// The recent part is the jobs created at or after split, the older
	// one those before: a cursor at split with the least id.
	rows, err := read(after, &split, limit)
	if err != nil || len(rows) >= limit {
		return rows, err
	}
	more, err := read(&domain.JobCursor{Created: split, ID: ""}, nil, limit-len(rows))
	return append(rows, more...), err
}

// createdNotAfter bounds created by the upper bounds of the updated and
// completed windows: a job is updated and completed at or after it is
// created, so a job created after such a bound cannot match. The page is
// in created order, so the bound is where the index walk starts instead
// of the newest job: "updated before last week" skips the last week.
func createdNotAfter(f domain.JobFilter, where *[]string, args *[]any) {
	for _, r := range []domain.TimeRange{f.Updated, f.Completed} {
		if r.End != nil {
			*where = append(*where, "created <= ?")
			*args = append(*args, StoredTime(*r.End))
		}
	}
}

// createdUpperBound is the latest creation time a job listed with f after
// the cursor can have (nil: none): the least of the created window's end,
// the cursor's and the bounds createdNotAfter adds.
func createdUpperBound(f domain.JobFilter, after *domain.JobCursor) *time.Time {
	var bound *time.Time
	for _, t := range []*time.Time{f.Created.End, f.Updated.End, f.Completed.End} {
		if t != nil && (bound == nil || t.Before(*bound)) {
			bound = t
		}
	}
	if after != nil && (bound == nil || after.Created.Before(*bound)) {
		bound = &after.Created
	}
	return bound
}

// jobIDSlack is how far a job's id time may be from its creation time and
// the job still be found by jobIDWindow's bounds. A job made by this
// version has its creation time's millisecond as its id's
// (domain.NewIDAt); the slack is for jobs stored before, whose id was
// taken from the wall clock near their creation.
const jobIDSlack = time.Hour

// jobIDWindow bounds col, a job id column of PostgreSQL's history tables,
// to the ids of jobs created in [start, end] (nil: open), so that the
// planner reads only the day partitions of that window (docs/operations.md,
// "Retention"): a job's id is a UUIDv7 of its creation time, and a UUIDv7's
// text order is its time order. A UUIDv7 made before the year 2527 starts
// with "0"; ids that do not, of jobs stored by other means, are not
// bounded (they live in the default partition). Empty for an open window.
func jobIDWindow(col string, start, end *time.Time) (string, []any) {
	var bounds []string
	var args []any
	if start != nil {
		bounds = append(bounds, col+" >= ?")
		args = append(args, idTimePrefix(start.Add(-jobIDSlack)))
	}
	if end != nil {
		bounds = append(bounds, col+" < ?")
		args = append(args, idTimePrefix(end.Add(jobIDSlack+time.Millisecond)))
	}
	if len(bounds) == 0 {
		return "", nil
	}
	return "(" + strings.Join(bounds, " AND ") + " OR " + col + " < '0' OR " + col + " >= '1')", args
}

// idTimePrefix is the first 13 characters of a UUIDv7 made at t's
// millisecond, clamped to the UUIDv7's 48-bit time.
func idTimePrefix(t time.Time) string {
	if t.Before(time.UnixMilli(0)) {
		t = time.UnixMilli(0)
	}
	if t.After(time.UnixMilli(1<<48 - 1)) {
		t = time.UnixMilli(1<<48 - 1)
	}
	return dayKeyPrefix(t)
}
