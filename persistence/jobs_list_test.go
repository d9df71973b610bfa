package persistence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// A list asked in two parts on PostgreSQL, the last day of its window and
// then the older rest, pages as one query does: every job once, newest
// first, including one created exactly a day before the window's end,
// whatever the window's inclusiveness, page size and cursor.
func TestJobs_ListPagesAcrossTheRecentDay(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		b := setupJobs(t, db)
		end := t0.Truncate(time.Second)
		var all []*domain.Job // newest first
		for _, ago := range []time.Duration{-time.Hour, 0, 30 * time.Minute, 23 * time.Hour, 24 * time.Hour, 24 * time.Hour,
			24*time.Hour + time.Microsecond, 25 * time.Hour, 49 * time.Hour, 100 * time.Hour} {
			created := end.Add(-ago)
			all = append(all, b.newJob(t, domain.NewIDAt(created), created, false))
		}
		newestFirst := func(js []*domain.Job) []string {
			ids := make([]string, 0, len(js))
			for _, j := range js {
				ids = append(ids, j.ID)
			}
			return ids
		}
		want := func(r domain.TimeRange) []string {
			var out []*domain.Job
			for _, j := range all {
				in := (r.Start == nil || j.Created.After(*r.Start) || r.Inclusive && j.Created.Equal(*r.Start)) &&
					(r.End == nil || j.Created.Before(*r.End) || r.Inclusive && j.Created.Equal(*r.End))
				if in {
					out = append(out, j)
				}
			}
			// created, id descending
			for i := range out {
				for k := i + 1; k < len(out); k++ {
					if out[k].Created.After(out[i].Created) || out[k].Created.Equal(out[i].Created) && out[k].ID > out[i].ID {
						out[i], out[k] = out[k], out[i]
					}
				}
			}
			return newestFirst(out)
		}
		threeDays := end.Add(-72 * time.Hour)
		for _, r := range []domain.TimeRange{
			{}, {End: &end}, {End: &end, Inclusive: true}, {Start: &threeDays, End: &end}, {Start: &threeDays, End: &end, Inclusive: true},
		} {
			for _, limit := range []int{1, 2, 3, 20} {
				var got []*domain.Job
				var after *domain.JobCursor
				for range 20 {
					page, err := b.jobs.ListJobs(t.Context(), b.account.ID, domain.JobFilter{Created: r}, after, limit)
					require.NoError(t, err)
					require.LessOrEqual(t, len(page), limit)
					got = append(got, page...)
					if len(page) < limit {
						break
					}
					after = &domain.JobCursor{Created: page[len(page)-1].Created, ID: page[len(page)-1].ID}
				}
				require.Equal(t, want(r), newestFirst(got), "window %+v, pages of %d", r, limit)
			}
		}
	})
}
