package persistence_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// metricHistory writes a random history over four days into db: jobs of
// three versions, finished both ways (stored finished, and claimed then
// finished), of client and internal types and every terminal status, with
// results, hits (a label twice in a result, too) and feedback, some of it
// replaced; and a second account with the same versions' ids.
type metricHistory struct {
	db    *persistence.DB
	jobs  *persistence.Jobs
	rng   *rand.Rand
	start time.Time
	// results of completed jobs, for feedback: job id, result id.
	results [][2]string
}

var metricVersions = []struct{ policy, label string }{{"pv1", ""}, {"pv2", ""}, {"", "lv1"}}

func newMetricHistory(t *testing.T, db *persistence.DB) *metricHistory {
	h := &metricHistory{db: db, jobs: persistence.NewJobs(db), rng: rand.New(rand.NewPCG(7, 11)),
		start: time.Date(2026, 3, 1, 17, 23, 0, 0, time.UTC)}
	for _, a := range []string{"acct", "other"} {
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(t.Context(), newAccount(a, t0)))
	}
	return h
}

func (h *metricHistory) job(account string, i int) *domain.Job {
	v := metricVersions[h.rng.IntN(len(metricVersions))]
	types := []domain.JobType{domain.JobTypeStandard, domain.JobTypeStandard, domain.JobTypeBatch, domain.JobTypeShadow, domain.JobTypeDatasetRun}
	created := h.start.Add(time.Duration(h.rng.IntN(4*24*60)) * time.Minute).Add(time.Duration(i) * time.Microsecond)
	return &domain.Job{ID: domain.NewIDAt(created), AccountID: account, Type: types[h.rng.IntN(len(types))], Status: domain.JobPending,
		PolicyVersionID: v.policy, LabelVersionID: v.label, Threshold: 0.5, Created: created, Updated: created}
}

func (h *metricHistory) outcome(j *domain.Job) ([]*domain.JobResult, []*domain.LabelHit) {
	var results []*domain.JobResult
	var hits []*domain.LabelHit
	for r := range 1 + h.rng.IntN(3) {
		res := &domain.JobResult{ID: domain.NewID(), JobID: j.ID, Index: r, ContentHash: "sha256::00", Created: j.Created}
		results = append(results, res)
		for range h.rng.IntN(4) {
			hits = append(hits, &domain.LabelHit{JobID: j.ID, JobResultID: res.ID, Seq: len(hits),
				Label: []string{"a", "b", "c"}[h.rng.IntN(3)], Modality: domain.ModalityText, Score: 1})
		}
	}
	return results, hits
}

// write stores n jobs of account: the even ones stored finished, the odd
// ones claimed and finished.
func (h *metricHistory) write(t *testing.T, account string, n int) {
	ctx := t.Context()
	statuses := []domain.JobStatus{domain.JobCompleted, domain.JobCompleted, domain.JobCompleted, domain.JobFailed, domain.JobCanceled}
	for i := range n {
		j := h.job(account, i)
		results, hits := h.outcome(j)
		to := statuses[h.rng.IntN(len(statuses))]
		if i%2 == 0 {
			completed := j.Created.Add(time.Second)
			j.Status, j.Completed = to, &completed
			require.NoError(t, h.jobs.CreateFinishedJob(ctx, j, results, hits))
		} else {
			require.NoError(t, h.jobs.CreateJob(ctx, j))
			claimed, err := h.jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Hour), 100, 0)
			require.NoError(t, err)
			require.Len(t, claimed, 1)
			require.NoError(t, h.jobs.FinishJob(ctx, j.ID, "w", to, t0, nil, results, hits))
		}
		for _, r := range results {
			h.results = append(h.results, [2]string{j.ID, r.ID})
		}
	}
}

// feedback annotates random results of account's jobs n times: some twice
// (replaced), some on an occurrence, some of a FAILED result or without a
// TRUE/FALSE judgement.
func (h *metricHistory) feedback(t *testing.T, account string, n int) {
	outcomes := []domain.EvaluationResult{domain.EvaluationResultTrue, domain.EvaluationResultFalse, domain.EvaluationResultTrue,
		domain.EvaluationResultFalse, "EVALUATION_RESULT_FAILED"}
	for i := range n {
		r := h.results[h.rng.IntN(min(len(h.results), 12+i))]
		a := &domain.FeedbackAnnotation{ID: domain.NewID(), AccountID: account, JobID: r[0], JobResultID: r[1],
			ContentHash: "sha256::00", Label: []string{"a", "b", "c"}[h.rng.IntN(3)],
			Expected: outcomes[h.rng.IntN(len(outcomes))], Actual: outcomes[h.rng.IntN(len(outcomes))], Created: t0, Updated: t0}
		if h.rng.IntN(6) == 0 {
			a.Occurrence = &domain.Occurrence{Modality: domain.ModalityImage, StartMs: 0}
		}
		require.NoError(t, persistence.NewFeedback(h.db).UpsertFeedback(t.Context(), a))
	}
}

// metricWindows are since/until pairs: open, whole days, parts of days
// at either end, within one day, and outside the history.
func metricWindows(start time.Time) [][2]*time.Time {
	at := func(d time.Duration) *time.Time { t := start.Truncate(24 * time.Hour).Add(d); return &t }
	const day = 24 * time.Hour
	return [][2]*time.Time{
		{nil, nil}, {at(day), nil}, {nil, at(2 * day)}, {at(day), at(3 * day)},
		{at(day + 5*time.Hour), nil}, {nil, at(2*day + 7*time.Minute)}, {at(20 * time.Hour), at(3*day + 90*time.Minute)},
		{at(day + time.Hour), at(day + 20*time.Hour)}, {at(day + 23*time.Hour), at(2*day + time.Hour)},
		{at(10 * day), nil}, {nil, at(-day)},
	}
}

// requireCountsAgree checks every version's metrics in every window
// against the jobs read directly.
func requireCountsAgree(t *testing.T, db *persistence.DB, start time.Time, when string) {
	t.Helper()
	store := persistence.NewQualityMetrics(db)
	for _, v := range metricVersions {
		for _, w := range metricWindows(start) {
			q := domain.MetricsQuery{AccountID: "acct", PolicyVersionID: v.policy, LabelVersionID: v.label,
				Since: w[0], Until: w[1], Labels: []string{"b"}}
			want, err := store.ScanVersionMetrics(t.Context(), q)
			require.NoError(t, err)
			got, err := store.VersionMetrics(t.Context(), q)
			require.NoError(t, err)
			require.Equal(t, want, got, "%s: version %v, window %s", when, v, windowString(w))
		}
	}
}

func windowString(w [2]*time.Time) string {
	s := [2]string{"-", "-"}
	for i, t := range w {
		if t != nil {
			s[i] = t.Format(time.RFC3339)
		}
	}
	return fmt.Sprintf("[%s, %s)", s[0], s[1])
}

// The counts give the metrics the jobs give, in any window: as written,
// after feedback is replaced, after expiry deleted part of the history,
// and as migration 00111 counts an existing history.
func TestVersionMetricCounts_AgreeWithTheJobs(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		h := newMetricHistory(t, db)
		h.write(t, "acct", 80)
		h.write(t, "other", 10)
		h.feedback(t, "acct", 60)
		requireCountsAgree(t, db, h.start, "written")

		h.feedback(t, "acct", 30)
		requireCountsAgree(t, db, h.start, "feedback replaced")

		before := h.start.Add(36 * time.Hour)
		for {
			_, n, err := persistence.NewRetention(db).ExpireJobs(t.Context(), "acct", before, 7)
			require.NoError(t, err)
			if n == 0 {
				break
			}
		}
		requireCountsAgree(t, db, h.start, "expired")

		require.NoError(t, db.RecountVersionMetrics(t.Context()))
		requireCountsAgree(t, db, h.start, "recounted")
	})
}

// A window of whole hours that is not whole days (the console's "last 24
// hours" starts at the current hour) is served from the counts alone: a
// job moved to another version behind the counts' back still counts
// there, which it would not if the window's first, partial day were read
// from the jobs.
func TestVersionMetricCounts_WholeHoursReadNoJob(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("acct", t0)))
		created := time.Date(2026, 3, 2, 5, 10, 0, 0, time.UTC)
		completed := created.Add(time.Second)
		j := &domain.Job{ID: domain.NewID(), AccountID: "acct", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
			PolicyVersionID: "pv", Threshold: 0.5, Created: created, Updated: created, Completed: &completed}
		results := []*domain.JobResult{{ID: domain.NewID(), JobID: j.ID, ContentHash: "sha256::00", Created: created}}
		require.NoError(t, persistence.NewJobs(db).CreateFinishedJob(ctx, j, results, nil))
		_, err := db.ExecContext(ctx, db.Rebind(`UPDATE jobs SET policy_version_id = 'elsewhere' WHERE id = ?`), j.ID)
		require.NoError(t, err)

		for _, w := range [][2]time.Time{
			{created.Add(-4*time.Hour - 10*time.Minute), created.Add(18*time.Hour + 50*time.Minute)}, // 01:00 to 00:00 the next day
			{created.Add(-10 * time.Minute), created.Add(50 * time.Minute)},                          // 05:00 to 06:00
		} {
			got, err := persistence.NewQualityMetrics(db).VersionMetrics(ctx,
				domain.MetricsQuery{AccountID: "acct", PolicyVersionID: "pv", Since: &w[0], Until: &w[1], Labels: []string{"a"}})
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.Equal(t, 1, got[0].Evaluations, "window %s", windowString([2]*time.Time{&w[0], &w[1]}))
		}
	})
}
