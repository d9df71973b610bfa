package evaluation

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

var runnerNow = time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)

func testPlanEval(t *testing.T, src string) EvaluateFunc {
	t.Helper()
	plan, err := rules.Compile(src, rules.CompileOptions{})
	require.NoError(t, err)
	return PolicyEvaluator(plan, &domain.Job{Threshold: 0.5}, nil)
}

// fakeInspector answers InspectImage with a fixed image or error, and
// records what it was asked.
type fakeInspector struct {
	img   *domain.InspectedImage
	err   error
	block time.Duration // fake time the inspection takes (synctest)
	got   domain.ContentItem
}

func (f *fakeInspector) InspectImage(ctx context.Context, accountID, jobID string, item domain.ContentItem, _ map[string]string) (*domain.InspectedImage, error) {
	f.got = item
	if f.block > 0 {
		select {
		case <-time.After(f.block):
		case <-ctx.Done():
			return nil, domain.Errorf(domain.InvalidArgument, "fetching the image: %v", ctx.Err())
		}
	}
	return f.img, f.err
}

func TestItemRunnerText(t *testing.T) {
	t.Parallel()
	r := NewItemRunner(ItemRunnerConfig{Now: func() time.Time { return runnerNow }})
	seq := 4
	it := Item{AccountID: "a", JobID: "j", Index: 2, Field: "contentData[2]", ContentHash: "sha256::t",
		Content: domain.ContentItem{Kind: domain.ContentText, Text: "I will kill you", Metadata: map[string]string{"k": "v"}}}
	res, hits, err := r.Run(context.Background(), it, testPlanEval(t, `LABEL "Violence" { =("kill") }`), &seq)
	require.NoError(t, err)
	require.Equal(t, "j", res.JobID)
	require.Equal(t, 2, res.Index)
	require.Equal(t, "sha256::t", res.ContentHash)
	require.Equal(t, map[string]string{"k": "v"}, res.Metadata)
	require.Equal(t, runnerNow, res.Created)
	require.Equal(t, []*domain.LabelHit{{JobID: "j", JobResultID: res.ID, Seq: 4, Label: "Violence", Modality: domain.ModalityText, Score: 1,
		Spans: []rules.TextSpan{{Start: 7, End: 11, Text: "kill"}}}}, hits)
	require.Equal(t, 5, seq)
}

func TestItemRunnerImage(t *testing.T) {
	t.Parallel()
	blocked := &domain.Error{Code: domain.Canceled, Message: "blocked", Details: []domain.Detail{domain.PrecheckFailure{Type: domain.PrecheckFailureNCMEC, Message: "m"}}}
	invalid := &domain.Error{Code: domain.Canceled, Message: "invalid", Details: []domain.Detail{domain.PrecheckFailure{Type: domain.PrecheckFailureInvalidImage}}}
	tests := []struct {
		name      string
		images    domain.ImageInspector
		wantJob   *domain.JobError // nil: evaluated
		request   bool             // RequestError is the cause
		wantField string           // the cause's field violation
	}{
		{name: "evaluated", images: &fakeInspector{img: &domain.InspectedImage{ContentHash: "sha256::img", Text: "kill", OCR: true}}},
		{name: "NCMEC match", images: &fakeInspector{err: blocked}, wantJob: &domain.ErrJobContentBlocked, request: true},
		{name: "invalid image", images: &fakeInspector{err: invalid}, wantJob: &domain.ErrJobPrecheckFailed, request: true},
		{name: "unreachable URL", images: &fakeInspector{err: domain.InvalidField("imageUrl", "could not be fetched")}, wantJob: &domain.ErrJobImageFetch,
			request: true, wantField: "contentData[1].imageUrl"},
		{name: "OCR missing", images: &fakeInspector{err: domain.Errorf(domain.FailedPrecondition, "no tesseract")}, wantJob: &domain.ErrJobOCRUnavailable, request: true},
		{name: "no inspector", images: nil, wantJob: &domain.ErrJobNoImage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewItemRunner(ItemRunnerConfig{Images: tc.images})
			it := Item{Index: 1, Field: "contentData[1]", Content: domain.ContentItem{Kind: domain.ContentImageURL, URL: "https://x/i.png"}}
			seq := 0
			res, hits, err := r.Run(context.Background(), it, testPlanEval(t, `LABEL "Violence" { =("kill") }`), &seq)
			if tc.wantJob == nil {
				require.NoError(t, err)
				require.Equal(t, "sha256::img", res.ContentHash, "an image URL's hash is the fetched image's")
				require.Len(t, hits, 1)
				require.Equal(t, domain.ModalityImage, hits[0].Modality)
				return
			}
			ie, ok := AsItemError(err)
			require.True(t, ok, "%v is the item's failure", err)
			require.Equal(t, *tc.wantJob, ie.Job)
			require.Equal(t, 1, ie.Index)
			if tc.request {
				require.Same(t, ie.Err, ie.RequestError())
			} else {
				require.NoError(t, ie.RequestError())
			}
			var de *domain.Error
			require.ErrorAs(t, ie.StreamError(), &de)
			if tc.wantField != "" {
				require.Equal(t, tc.wantField, de.Details[0].(domain.BadRequest).FieldViolations[0].Field)
			}
		})
	}
}

func TestItemRunnerMedia(t *testing.T) {
	t.Parallel()
	eval := testPlanEval(t, `LABEL "Violence" { =("kill") }`)
	an := &fakeAnalyzer{text: "I will kill you"}
	preFor := func(accountID, jobID string) domain.FramePrecheck { return &jobPrecheck{accountID, jobID} }
	r := NewItemRunner(ItemRunnerConfig{Media: an, MediaPrecheck: preFor, Now: func() time.Time { return runnerNow }})
	seq := 0
	it := Item{AccountID: "acct1", JobID: "job1", Content: domain.ContentItem{Kind: domain.ContentVideoURL, URL: "https://cdn/v.mp4", Metadata: map[string]string{"k": "v"}}}
	res, hits, err := r.Run(context.Background(), it, eval, &seq)
	require.NoError(t, err)
	require.Equal(t, &jobPrecheck{"acct1", "job1"}, an.pre, "the precheck is the job's own, for its audit records")
	require.Equal(t, domain.MediaInput{Kind: domain.MediaVideo, URL: "https://cdn/v.mp4"}, an.got)
	require.Equal(t, "sha256::fetched", res.ContentHash, "a URL's hash comes from what was fetched")
	require.Equal(t, runnerNow, res.Created)
	require.Equal(t, map[string]string{"k": "v"}, res.Metadata)
	require.Equal(t, rules.OutcomeTrue, res.Report.Result)
	require.Equal(t, []*domain.LabelHit{{JobID: "job1", JobResultID: res.ID, Seq: 0, Label: "Violence", Modality: domain.ModalityVideo, Score: 1,
		StartMs: 100, EndMs: itemMs(900), FrameStartMs: itemMs(0), FrameEndMs: itemMs(1000),
		TranscriptStartMs: itemMs(100), TranscriptEndMs: itemMs(900)}}, hits)

	it = Item{JobID: "job1", Index: 1, ContentHash: "sha256::submitted", Content: domain.ContentItem{Kind: domain.ContentAudio, Bytes: []byte("x")}}
	res, _, err = r.Run(context.Background(), it, eval, &seq)
	require.NoError(t, err)
	require.Equal(t, "sha256::submitted", res.ContentHash, "inline bytes keep the hash computed on submission")

	an.err = domain.NewMediaError(domain.ReasonVideoValidationFailure, "fixed message", errors.New("cause"))
	_, _, err = r.Run(context.Background(), it, eval, &seq)
	ie, ok := AsItemError(err)
	require.True(t, ok)
	require.Equal(t, domain.JobError{Reason: domain.ReasonVideoValidationFailure, Message: "fixed message"}, ie.Job)
	require.Equal(t, domain.InvalidArgument, ie.StreamError().Code, "a media failure's stream line")
	require.NoError(t, ie.RequestError())

	an.err = &blockedErr{"JOB_ERROR_REASON_CONTENT_BLOCKED"}
	_, _, err = r.Run(context.Background(), it, eval, &seq)
	ie, ok = AsItemError(err)
	require.True(t, ok)
	require.Equal(t, domain.ErrJobContentBlocked, ie.Job, "a blocked frame")

	_, _, err = NewItemRunner(ItemRunnerConfig{}).Run(context.Background(), it, eval, &seq)
	ie, ok = AsItemError(err)
	require.True(t, ok)
	require.Equal(t, domain.ErrJobNoMedia, ie.Job)
}

// blockingEval waits for its context: an evaluation that never ends by
// itself.
func blockingEval(ctx context.Context, _ rules.Content) (*rules.Report, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestItemRunnerBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := NewItemRunner(ItemRunnerConfig{Budget: time.Second})
		it := Item{Index: 3, Content: domain.ContentItem{Kind: domain.ContentText, Text: "x"}}
		seq := 0
		start := time.Now()
		_, _, err := r.Run(context.Background(), it, blockingEval, &seq)
		require.Equal(t, time.Second, time.Since(start), "the item ends at its budget")
		ie, ok := AsItemError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, domain.ErrJobItemDeadline, ie.Job)
		require.Equal(t, 3, ie.Index)
		require.Equal(t, domain.DeadlineExceeded, ie.StreamError().Code)
		require.NoError(t, ie.RequestError(), "a synchronous caller gets the failed job")
	})
}

// The run's own end (shutdown, lost lease, job deadline, a client gone) is
// never the item's failure, even when it cut an inspection short.
func TestItemRunnerRunEndsFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r := NewItemRunner(ItemRunnerConfig{Budget: time.Minute, Images: &fakeInspector{block: time.Hour}})
		for _, it := range []Item{
			{Content: domain.ContentItem{Kind: domain.ContentText, Text: "x"}},
			{Content: domain.ContentItem{Kind: domain.ContentImageURL, URL: "https://x/i.png"}},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			seq := 0
			_, _, err := r.Run(ctx, it, blockingEval, &seq)
			cancel()
			_, isItem := AsItemError(err)
			require.False(t, isItem, "%s: %v", it.Content.Kind, err)
			require.Error(t, err)
		}
	})
}

// Label evaluation inspects an image once and evaluates it per version:
// each stage has a budget of its own, where a job's item has one for both.
func TestItemRunnerStageBudgets(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		images := &fakeInspector{img: &domain.InspectedImage{ContentHash: "sha256::img"}, block: 800 * time.Millisecond}
		r := NewItemRunner(ItemRunnerConfig{Budget: time.Second, Images: images})
		it := Item{Content: domain.ContentItem{Kind: domain.ContentImage, Bytes: []byte("png")}}
		slowEval := func(ctx context.Context, c rules.Content) (*rules.Report, error) {
			select {
			case <-time.After(800 * time.Millisecond):
				return &rules.Report{}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		in, err := r.Inspect(context.Background(), it)
		require.NoError(t, err)
		require.Equal(t, "sha256::img", in.ContentHash())
		require.NotNil(t, in.Content().Image)
		seq := 0
		for range 2 {
			_, _, err := r.Evaluate(context.Background(), in, slowEval, &seq)
			require.NoError(t, err)
		}
		_, _, err = r.Run(context.Background(), it, slowEval, &seq)
		ie, ok := AsItemError(err)
		require.True(t, ok, "%v", err)
		require.Equal(t, domain.ErrJobItemDeadline, ie.Job)
	})
}

// Evaluation errors are the run's: only inspection and media analysis name
// job errors of their own.
func TestItemRunnerEvaluationErrorIsNotTheItems(t *testing.T) {
	t.Parallel()
	r := NewItemRunner(ItemRunnerConfig{})
	seq := 0
	failing := func(context.Context, rules.Content) (*rules.Report, error) {
		return nil, domain.InvalidField("x", "looks like a fetch error but comes from evaluation")
	}
	_, _, err := r.Run(context.Background(), Item{Content: domain.ContentItem{Kind: domain.ContentText}}, failing, &seq)
	_, isItem := AsItemError(err)
	require.False(t, isItem)
}
