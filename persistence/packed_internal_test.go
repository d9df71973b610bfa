package persistence

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/rules"
)

// report20 is a report of the load tests' 20-label policy (three rules a
// label) on a text where one label matched.
func report20() *rules.Report {
	r := &rules.Report{Result: rules.OutcomeTrue, Threshold: 0.5, LabelMatches: map[string]float64{"label-05": 1},
		TokenUsage: rules.TokenUsage{Multiplier: 1.954}}
	for i := range 20 {
		s := rules.SectionReport{Name: fmt.Sprintf("label-%02d", i), Message: "review", Result: rules.OutcomeFalse,
			Assertions: []rules.AssertionReport{
				{Result: rules.OutcomeFalse, Message: fmt.Sprintf(`=("forbidden phrase %d")`, i)},
				{Result: rules.OutcomeFalse, Message: fmt.Sprintf(`~("spamword%d")`, i)},
				{Result: rules.OutcomeFalse, Message: fmt.Sprintf(`"violent threat %d" (lexical match)`, i)}},
			Review: rules.ReviewResult{Outcome: rules.OutcomeFalse}}
		if i == 5 {
			s.Result, s.Score, s.Assertions[0].Result, s.Assertions[0].Score = rules.OutcomeTrue, 1, rules.OutcomeTrue, 1
			s.Matches = []rules.Span{{Start: 0, End: 18}}
		}
		r.Sections = append(r.Sections, s)
	}
	return r
}

// Packed JSON decodes to what was packed, and a format it does not know is
// an error, not a silently empty value.
func TestPackJSON_RoundTripAndUnknownFormat(t *testing.T) {
	rep := report20()
	b, err := packJSON(rep)
	require.NoError(t, err)
	text, err := json.Marshal(rep)
	require.NoError(t, err)
	t.Logf("report: %d bytes of JSON, %d packed", len(text), len(b))
	require.Less(t, len(b), len(text)/10)
	var got rules.Report
	require.NoError(t, unpackJSON(b, &got))
	require.Equal(t, *rep, got)

	for _, bad := range [][]byte{nil, {}, {9, 1, 2}, {packedV1, 0xff, 0xff}} {
		require.Error(t, unpackJSON(bad, &got), "%v", bad)
	}
}

// The CPU a synchronous job's result pays to pack its report and to read
// it back.
func BenchmarkPackReport(b *testing.B) {
	rep := report20()
	packed, err := packJSON(rep)
	require.NoError(b, err)
	b.Run("pack", func(b *testing.B) {
		for b.Loop() {
			if _, err := packJSON(rep); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unpack", func(b *testing.B) {
		for b.Loop() {
			var r rules.Report
			if err := unpackJSON(packed, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			if _, err := marshalJSON(rep); err != nil {
				b.Fatal(err)
			}
		}
	})
}
