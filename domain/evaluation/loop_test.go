package evaluation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// loopItems are a job's items: text, an image (refused without an image
// inspector), text.
func loopItems() []Item {
	j := &domain.Job{ID: "j", AccountID: "a", Threshold: 0.5, Input: []domain.ContentItem{
		{Kind: domain.ContentText, Text: "I will kill you"},
		{Kind: domain.ContentImage, Bytes: []byte("png")},
		{Kind: domain.ContentText, Text: "kill"},
	}}
	return JobItems(j)
}

// The loop stops at an item's own failure, or, keeping going, hands it to
// its callback with the other items' results; Yield stops it between two
// items, never before the first.
func TestLoop(t *testing.T) {
	t.Parallel()
	eval := testPlanEval(t, `LABEL "Violence" { =("kill") }`)
	r := NewItemRunner(ItemRunnerConfig{Now: func() time.Time { return runnerNow }})
	for _, tc := range []struct {
		name      string
		loop      Loop
		wantRan   int
		wantOK    []int // indexes of the items with a result
		wantFail  []int // indexes of the items that failed on their own
		wantJob   domain.JobErrorReason
		wantSeq   int
		wantError bool
	}{
		{"stops at an item's failure", Loop{Runner: r, Eval: eval}, 1, []int{0}, nil, domain.ReasonJobFailed, 1, true},
		{"keeps going past it", Loop{Runner: r, Eval: eval, KeepGoing: true}, 3, []int{0, 2}, []int{1}, "", 2, false},
		{"yields before the second item", Loop{Runner: r, Eval: eval, KeepGoing: true, Yield: func() bool { return true }}, 1, []int{0}, nil, "", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq := 0
			var ok, failed []int
			ran, err := tc.loop.Run(context.Background(), loopItems(), &seq, func(o Outcome) error {
				if o.Failed != nil {
					failed = append(failed, o.Item.Index)
					require.Nil(t, o.Result)
					require.Equal(t, domain.ErrJobNoImage, o.Failed.Job)
					return nil
				}
				ok = append(ok, o.Item.Index)
				require.Equal(t, o.Item.Index, o.Result.Index)
				return nil
			})
			require.Equal(t, tc.wantRan, ran)
			require.Equal(t, tc.wantOK, ok)
			require.Equal(t, tc.wantFail, failed)
			require.Equal(t, tc.wantSeq, seq, "hits are numbered across the items")
			if !tc.wantError {
				require.NoError(t, err)
				return
			}
			ie, isItem := AsItemError(err)
			require.True(t, isItem, "%v", err)
			require.Equal(t, 1, ie.Index)
			require.Equal(t, tc.wantJob, ie.Job.Reason)
		})
	}
	// The callback's error ends the loop as it is.
	boom := errors.New("client gone")
	ran, err := Loop{Runner: r, Eval: eval}.Run(context.Background(), loopItems()[:1], new(int), func(Outcome) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, 0, ran)
}

// End maps the error that ended a run to the job's end: an item's own
// failure, then a stop from outside, the deadline, a lost lease, anything
// else.
func TestEnd(t *testing.T) {
	t.Parallel()
	live := context.Background()
	stopped, stop := context.WithCancel(live)
	stop()
	lost, lose := context.WithCancel(live)
	lose()
	late, cancel := context.WithDeadline(live, time.Unix(0, 0))
	defer cancel()
	item := &ItemError{Index: 2, Job: domain.ErrJobPrecheckFailed, Err: errors.New("blocked")}
	for _, tc := range []struct {
		name          string
		stopped, exec context.Context
		err           error
		want          Ending
		wantJob       domain.JobError
	}{
		{"an item's failure", live, live, item, EndItem, domain.ErrJobPrecheckFailed},
		{"an item's failure, wrapped", live, live, errors.Join(errors.New("x"), item), EndItem, domain.ErrJobPrecheckFailed},
		{"the process shuts down", stopped, stopped, context.Canceled, EndStopped, domain.JobError{}},
		{"the deadline", live, late, context.DeadlineExceeded, EndDeadline, domain.ErrJobDeadline},
		{"the lease is lost", live, lost, context.Canceled, EndLeaseLost, domain.JobError{}},
		{"anything else", live, live, errors.New("disk full"), EndInternal, domain.ErrJobInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, jobErr := End(tc.stopped, tc.exec, tc.err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.wantJob, jobErr)
		})
	}
}

// Unavailable names the job error of the first item the runner's adapters
// cannot evaluate.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	text := domain.ContentItem{Kind: domain.ContentText}
	img := domain.ContentItem{Kind: domain.ContentImage}
	video := domain.ContentItem{Kind: domain.ContentVideo}
	bare := NewItemRunner(ItemRunnerConfig{})
	require.Nil(t, bare.Unavailable([]domain.ContentItem{text}))
	require.Equal(t, domain.ErrJobNoImage, *bare.Unavailable([]domain.ContentItem{text, img}))
	require.Equal(t, domain.ErrJobNoMedia, *bare.Unavailable([]domain.ContentItem{video, img}))
	withImages := NewItemRunner(ItemRunnerConfig{Images: &fakeInspector{}})
	require.Nil(t, withImages.Unavailable([]domain.ContentItem{text, img}))
	require.Equal(t, domain.ErrJobNoMedia, *withImages.Unavailable([]domain.ContentItem{img, video}))
}
