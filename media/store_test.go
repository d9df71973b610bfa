package media

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestVideoHitsRoundTripTheStore: the hits of a generated video, numbered as
// the worker numbers them, are stored with the job and read back field for
// field — present and absent bounds alike — on SQLite and, when
// CONTENTEVAL_TEST_DATABASE_URL is set, PostgreSQL.
func TestVideoHitsRoundTripTheStore(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	v := makeVideo(t, tools, true)
	got, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(context.Background(),
		domain.MediaInput{Kind: domain.MediaVideo, Data: v.data, Captions: captions, HasCaptions: true}, nil, compile(t, policy(v)))
	require.NoError(t, err)
	audio, err := newAnalyzer(t, tools, Config{}, nil).AnalyzeMedia(context.Background(),
		domain.MediaInput{Kind: domain.MediaAudio, Data: v.data, Captions: "WEBVTT\n\n00:00.250 --> 00:01.750\nthey will kill\n", HasCaptions: true},
		nil, compile(t, policy(v)))
	require.NoError(t, err)

	t0 := time.Date(2026, 11, 22, 7, 0, 0, 0, time.UTC)
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		acct := &domain.Account{ID: "a1", Name: "a1", Type: domain.AccountLabelFirst, Created: t0, Updated: t0}
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, acct))
		jobs := persistence.NewJobs(db)
		require.NoError(t, jobs.CreateJob(ctx, &domain.Job{
			ID: "j1", AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobPending, PolicyID: "p", PolicyVersionID: "v",
			Threshold: 0.5,
			Input: []domain.ContentItem{{Kind: domain.ContentVideo, Bytes: v.data, Captions: captions},
				{Kind: domain.ContentAudio, Bytes: v.data}},
			Contents: []domain.ContentSummary{{ContentHash: got.ContentHash}, {ContentHash: audio.ContentHash}},
			Created:  t0, Updated: t0,
		}))
		_, err := jobs.ClaimJobs(ctx, "w", t0, t0.Add(time.Minute), 1, 0)
		require.NoError(t, err)
		seq := 0
		results := []*domain.JobResult{
			{ID: "r0", JobID: "j1", Index: 0, ContentHash: got.ContentHash, Report: got.Report, Created: t0},
			{ID: "r1", JobID: "j1", Index: 1, ContentHash: audio.ContentHash, Report: audio.Report, Created: t0},
		}
		hits := append(evaluation.TimedLabelHits("j1", "r0", got.Hits, &seq), evaluation.TimedLabelHits("j1", "r1", audio.Hits, &seq)...)
		require.NoError(t, jobs.FinishJob(ctx, "j1", "w", domain.JobCompleted, t0.Add(time.Second), nil, results, hits))

		stored, err := jobs.ListLabelHits(ctx, "j1", "", -1, 100)
		require.NoError(t, err)
		cue := []rules.TextSpan{{Start: 7, End: 11, Text: "kill", Transcript: &rules.TimeRange{StartMs: 1500, EndMs: 3000}}}
		require.Equal(t, []*domain.LabelHit{
			{JobID: "j1", JobResultID: "r0", Seq: 0, Label: "Violence", Modality: domain.ModalityVideo, Score: 1,
				StartMs: 1500, EndMs: msp(2000), FrameStartMs: msp(0), FrameEndMs: msp(2000),
				TranscriptStartMs: msp(1500), TranscriptEndMs: msp(3000), Spans: cue},
			{JobID: "j1", JobResultID: "r0", Seq: 1, Label: "KnownBad", Modality: domain.ModalityVideo, Score: 1,
				StartMs: 2000, FrameStartMs: msp(2000), FrameEndMs: msp(4000)},
			{JobID: "j1", JobResultID: "r0", Seq: 2, Label: "Violence", Modality: domain.ModalityVideo, Score: 1,
				StartMs: 2000, EndMs: msp(3000), FrameStartMs: msp(2000), FrameEndMs: msp(4000),
				TranscriptStartMs: msp(1500), TranscriptEndMs: msp(3000), Spans: cue},
			{JobID: "j1", JobResultID: "r1", Seq: 3, Label: "Violence", Modality: domain.ModalityAudio, Score: 1,
				StartMs: 250, EndMs: msp(1750), Spans: []rules.TextSpan{{Start: 10, End: 14, Text: "kill", Transcript: &rules.TimeRange{StartMs: 250, EndMs: 1750}}}},
		}, stored)
	})
}
