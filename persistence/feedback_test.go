package persistence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

func TestFeedback_UpsertKeepsPositionAndLists(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		jobs := persistence.NewJobs(db)
		for _, id := range []string{"job-1", "job-2"} {
			require.NoError(t, jobs.CreateJob(ctx, &domain.Job{ID: id, AccountID: f.a, Type: domain.JobTypeStandard,
				Status: domain.JobPending, Threshold: 0.5, Created: t0, Updated: t0}))
		}
		store := persistence.NewFeedback(db)
		ann := func(id, label string, at time.Time, occ *domain.Occurrence) *domain.FeedbackAnnotation {
			return &domain.FeedbackAnnotation{ID: id, AccountID: f.a, JobID: "job-1", JobResultID: "r1", ContentHash: "sha256::aa",
				Occurrence: occ, Label: label, Expected: domain.EvaluationResultTrue, Actual: domain.EvaluationResultFalse,
				Comment: "first", Created: at, Updated: at}
		}
		a := ann("fb-a", "Threat", t0, nil)
		require.NoError(t, store.UpsertFeedback(ctx, a))
		end := int64(2000)
		b := ann("fb-b", "Threat", t0.Add(time.Second), &domain.Occurrence{Modality: domain.ModalityVideo, StartMs: 1000, EndMs: &end})
		require.NoError(t, store.UpsertFeedback(ctx, b))
		c := ann("fb-c", "Spam", t0.Add(2*time.Second), nil)
		require.NoError(t, store.UpsertFeedback(ctx, c))

		// Same job, result, target and label: replaced in place.
		again := ann("fb-new-id", "Threat", t0.Add(time.Hour), nil)
		again.Expected, again.Comment, again.LabelID = domain.EvaluationResultFalse, "second", "label-x"
		require.NoError(t, store.UpsertFeedback(ctx, again))
		require.Equal(t, "fb-a", again.ID)
		require.Equal(t, persistence.StoredTime(t0), again.Created)

		all, err := store.ListFeedback(ctx, f.a, "job-1", nil, 10)
		require.NoError(t, err)
		require.Len(t, all, 3)
		require.Equal(t, []string{"fb-a", "fb-b", "fb-c"}, []string{all[0].ID, all[1].ID, all[2].ID})
		require.Equal(t, again, all[0])
		require.Equal(t, "second", all[0].Comment)
		require.Equal(t, persistence.StoredTime(t0.Add(time.Hour)), all[0].Updated)
		require.Equal(t, b.Occurrence, all[1].Occurrence)
		require.Nil(t, all[0].Occurrence)

		page, err := store.ListFeedback(ctx, f.a, "job-1", &domain.FeedbackCursor{Created: all[0].Created, ID: all[0].ID}, 1)
		require.NoError(t, err)
		require.Equal(t, []*domain.FeedbackAnnotation{all[1]}, page)
		none, err := store.ListFeedback(ctx, f.b, "job-1", nil, 10)
		require.NoError(t, err)
		require.Empty(t, none)
		require.NotNil(t, none)
		none, err = store.ListFeedback(ctx, f.a, "job-2", nil, 10)
		require.NoError(t, err)
		require.Empty(t, none)

		// An unknown job is NOT_FOUND.
		bad := ann("fb-d", "Threat", t0, nil)
		bad.JobID = "missing"
		requireCode(t, store.UpsertFeedback(ctx, bad), domain.NotFound)
	})
}

func TestLabelVersions_FindByID(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		l := f.create(t, f.a, "L", "")
		v := f.version(f.a, l.ID)
		require.NoError(t, f.versions.CreateLabelVersion(ctx, v))
		got, err := f.versions.FindLabelVersion(ctx, f.a, v.ID)
		require.NoError(t, err)
		require.Equal(t, v, got)
		_, err = f.versions.FindLabelVersion(ctx, f.b, v.ID)
		requireCode(t, err, domain.NotFound)
		_, err = f.versions.FindLabelVersion(ctx, f.a, "nope")
		requireCode(t, err, domain.NotFound)
	})
}

func TestLabelHits_Range(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		jobs := persistence.NewJobs(db)
		until := t0.Add(time.Hour)
		require.NoError(t, jobs.CreateJob(ctx, &domain.Job{ID: "job-1", AccountID: f.a, Type: domain.JobTypeStandard,
			Status: domain.JobRunning, Threshold: 0.5, LeaseOwner: "w", LeaseExpiresAt: &until, Created: t0, Updated: t0}))
		r := &domain.JobResult{ID: "r1", JobID: "job-1", Created: t0}
		var hits []*domain.LabelHit
		for _, seq := range []int{0, 1, 2, 5, 6} { // a gap at 3 and 4
			end := int64(seq*10 + 5)
			hits = append(hits, &domain.LabelHit{JobID: "job-1", JobResultID: "r1", Seq: seq, Label: "L", Modality: domain.ModalityAudio,
				Score: 0.5, StartMs: int64(seq * 10), EndMs: &end})
		}
		require.NoError(t, jobs.FinishJob(ctx, "job-1", "w", domain.JobCompleted, t0, nil, []*domain.JobResult{r}, hits))
		lh := persistence.NewLabelHits(db)
		seqs := func(after, last int) []int {
			got, err := lh.ListLabelHitsInRange(ctx, "job-1", after, last)
			require.NoError(t, err)
			out := []int{}
			for _, h := range got {
				out = append(out, h.Seq)
			}
			return out
		}
		require.Equal(t, []int{0, 1, 2}, seqs(-1, 2))
		require.Equal(t, []int{1, 2, 5}, seqs(0, 5))
		require.Equal(t, []int{6}, seqs(5, 100))
		require.Equal(t, []int{}, seqs(6, 100))
		got, err := lh.ListLabelHitsInRange(ctx, "job-1", 4, 5)
		require.NoError(t, err)
		require.Equal(t, hits[3], got[0])
		byResult, err := lh.ListResultHits(ctx, "r1", 1, 2)
		require.NoError(t, err)
		require.Equal(t, []*domain.LabelHit{hits[2], hits[3]}, byResult)
		byResult, err = lh.ListResultHits(ctx, "nope", -1, 10)
		require.NoError(t, err)
		require.Empty(t, byResult)
	})
}
