package evaluation

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/stretchr/testify/require"
)

// itemMs is a millisecond bound of a timed hit.
func itemMs(v int64) *int64 { return &v }

// fakeAnalyzer returns a fixed analysis after evaluating one chunk through
// the callback, so the test sees the job's plan and options reach it.
type fakeAnalyzer struct {
	got  domain.MediaInput
	pre  domain.FramePrecheck
	err  error
	text string
	// repeat makes every hit this many times, a second apart.
	repeat int
}

func (f *fakeAnalyzer) AnalyzeMedia(ctx context.Context, in domain.MediaInput, pre domain.FramePrecheck, eval domain.MediaEvalFunc) (*domain.MediaAnalysis, error) {
	f.got, f.pre = in, pre
	if f.err != nil {
		return nil, f.err
	}
	rep, err := eval(ctx, rules.Content{Text: f.text, Modality: "video"})
	if err != nil {
		return nil, err
	}
	var hits []domain.TimedHit
	for k := range max(f.repeat, 1) {
		at := int64(k) * 1000
		for _, l := range domain.TrueLabels(rep) {
			hits = append(hits, domain.TimedHit{Label: l.Label, Kind: in.Kind, Score: l.Score, StartMs: at + 100, EndMs: itemMs(at + 900),
				FrameStartMs: itemMs(at), FrameEndMs: itemMs(at + 1000), TranscriptStartMs: itemMs(at + 100), TranscriptEndMs: itemMs(at + 900)})
		}
	}
	return &domain.MediaAnalysis{Kind: in.Kind, ContentHash: "sha256::fetched", Hits: hits, Report: rep}, nil
}

type jobPrecheck struct{ account, job string }

func (*jobPrecheck) PrecheckFrame(context.Context, domain.VideoFrame) error { return nil }
func (*jobPrecheck) PrecheckMatches() []rules.PrecheckMatch                 { return nil }

type blockedErr struct{ reason string }

func (b *blockedErr) Error() string  { return "blocked" }
func (b *blockedErr) Reason() string { return b.reason }

func TestMediaJobError(t *testing.T) {
	t.Parallel()
	require.Nil(t, mediaJobError(nil))
	require.Nil(t, mediaJobError(errors.New("internal")))
	require.Nil(t, mediaJobError(context.DeadlineExceeded))
	for _, reason := range []domain.JobErrorReason{domain.ReasonVideoValidationFailure, domain.ReasonVideoSceneCeilingExceeded,
		domain.ReasonHLSRemuxTimeoutExhausted, domain.ReasonTranscriptArtifactInvalid, domain.ReasonVideoSourceUnreachable} {
		err := fmt.Errorf("item 0: %w", domain.NewMediaError(reason, "fixed message", errors.New("cause")))
		require.Equal(t, &domain.JobError{Reason: reason, Message: "fixed message"}, mediaJobError(err))
	}
	require.Equal(t, &domain.ErrJobContentBlocked, mediaJobError(&blockedErr{"JOB_ERROR_REASON_CONTENT_BLOCKED"}))
	require.Equal(t, &domain.ErrJobPrecheckFailed, mediaJobError(&blockedErr{"JOB_ERROR_REASON_CONTENT_PRECHECK_FAILED"}))
	require.Nil(t, mediaJobError(&blockedErr{"SOMETHING_ELSE"}))
}

func TestRenameFields(t *testing.T) {
	err := RenameFields(domain.InvalidField("contentData[0].text", "is too long"), "contentData[0]", "examples[3].contentData")
	e := err.(*domain.Error)
	br := e.Details[0].(domain.BadRequest)
	if br.FieldViolations[0].Field != "examples[3].contentData.text" || e.Message != "invalid examples[3].contentData.text: is too long" {
		t.Errorf("renamed: %+v", e)
	}
	err = RenameFields(domain.InvalidField("imageUrl", "could not be fetched"), "", "examples[0].contentData.")
	if f := err.(*domain.Error).Details[0].(domain.BadRequest).FieldViolations[0].Field; f != "examples[0].contentData.imageUrl" {
		t.Errorf("prefixed: %s", f)
	}
	other := domain.Errorf(domain.Canceled, "blocked")
	if RenameFields(other, "", "x.") != other {
		t.Error("a precheck refusal must come back as it is (its 499 body)")
	}
}
