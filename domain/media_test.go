package domain

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/rules"
)

func TestMediaTrueLabels(t *testing.T) {
	t.Parallel()
	require.Nil(t, TrueLabels(nil))
	tr := &rules.TimeRange{StartMs: 10, EndMs: 20}
	spans := []rules.TextSpan{{Start: 0, End: 4, Text: "kill", Transcript: tr}, {Start: 5, End: 8, Text: "you", Transcript: tr}}
	rep := &rules.Report{Sections: []rules.SectionReport{
		{Name: "A", Result: rules.OutcomeTrue, Score: 0.9, Assertions: []rules.AssertionReport{
			{Result: rules.OutcomeTrue, Spans: &[]rules.TextSpan{spans[1]}}, {Result: rules.OutcomeTrue, Spans: &spans},
		}},
		{Name: "B", Result: rules.OutcomeFalse, Score: 0.2},
		{Name: "C", Result: rules.OutcomeFailed, Score: -1},
		{Name: "D", Result: rules.OutcomeTrue, Score: 0.5},
	}}
	// A label's spans are its rules' together, in text order, each once.
	require.Equal(t, []ScoredLabel{{Label: "A", Score: 0.9, Spans: spans}, {Label: "D", Score: 0.5}}, TrueLabels(rep))
}

// mediaSeg and mediaChunk keep the tables short.

func TestMediaError(t *testing.T) {
	t.Parallel()
	cause := errors.New("ffmpeg: moov atom not found")
	err := fmt.Errorf("wrapped: %w", NewMediaError(ReasonVideoValidationFailure, "The submitted media could not be validated or decoded.", cause))
	me, ok := MediaErrorOf(err)
	require.True(t, ok)
	require.Equal(t, JobError{Reason: ReasonVideoValidationFailure, Message: "The submitted media could not be validated or decoded."}, me.JobError())
	require.ErrorIs(t, err, cause)
	_, ok = MediaErrorOf(errors.New("other"))
	require.False(t, ok)
	u := MediaUnavailableError([]string{"ffmpeg", "ffprobe"})
	require.Equal(t, ReasonJobFailed, u.Reason)
	require.Contains(t, u.Message, "ffmpeg")
}
