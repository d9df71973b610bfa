package evaluation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// The timed hits of a video or audio item are bounded per label and per
// item, the earliest kept, and its report says so; an item within the
// bounds keeps every hit and says nothing.
func TestItemRunnerBoundsTimedHits(t *testing.T) {
	t.Parallel()
	evals := map[int]EvaluateFunc{}
	for _, labels := range []int{10, 20} {
		var policy strings.Builder
		for i := range labels {
			fmt.Fprintf(&policy, "LABEL \"L%02d\" { =(\"kill\") }\n", i)
		}
		evals[labels] = testPlanEval(t, policy.String())
	}
	cases := []struct {
		name           string
		labels, repeat int
		wantHits       int
		cut            bool
	}{
		{"within the bounds", 20, 10, 200, false},
		{"past the bound of a label", 10, domain.MaxTimedHitsPerLabel + 50, 10 * domain.MaxTimedHitsPerLabel, true},
		{"past the bound of the item", 20, 1000, domain.MaxTimedHitsPerItem, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eval := evals[tc.labels]
			an := &fakeAnalyzer{text: "I will kill you", repeat: tc.repeat}
			r := NewItemRunner(ItemRunnerConfig{Media: an, Now: func() time.Time { return runnerNow }})
			seq := 0
			it := Item{JobID: "job1", Content: domain.ContentItem{Kind: domain.ContentAudio, Bytes: []byte("x")}}
			res, hits, err := r.Run(context.Background(), it, eval, &seq)
			require.NoError(t, err)
			require.Equal(t, tc.wantHits, len(hits))
			require.Equal(t, tc.cut, res.Report.HitsTruncated)
			require.Equal(t, tc.labels, len(res.Report.LabelMatches), "every label's verdict is whole")
			perLabel := map[string]int{}
			for i, h := range hits {
				perLabel[h.Label]++
				require.LessOrEqual(t, perLabel[h.Label], domain.MaxTimedHitsPerLabel)
				require.Equal(t, i, h.Seq)
				if i > 0 {
					require.LessOrEqual(t, hits[i-1].StartMs, h.StartMs, "the earliest are kept, in timeline order")
				}
			}
		})
	}
}
