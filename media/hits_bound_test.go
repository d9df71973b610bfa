package media

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// The timed hits of an item are bounded as they are made: an audio item
// whose every caption cue hits every label holds at most twice the item's
// bound of hits (plus one cue's), not all of them until the end; the
// earliest are kept, the report says hits were left out, and every
// label's verdict is whole. Before, every hit was built, then limited.
func TestAnalyzeBoundsHitsAsMade(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	path := filepath.Join(t.TempDir(), "tone.m4a")
	ffmpeg(t, tools, "-f", "lavfi", "-i", "sine=f=440:d=4", "-c:a", "aac", path)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cases := []struct {
		name              string
		labels, cues      int
		wantHits, maxPeak int
		cut               bool
	}{
		{"within the bounds", 4, 50, 200, 200, false},
		{"every cue hits every label", 20, 1000, domain.MaxTimedHitsPerItem, 2*domain.MaxTimedHitsPerItem + 20, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var policy strings.Builder
			for i := range tc.labels {
				fmt.Fprintf(&policy, "LABEL \"L%02d\" { =(\"kill\") }\n", i)
			}
			var vtt strings.Builder
			vtt.WriteString("WEBVTT\n\n")
			for i := range tc.cues {
				// Cues of 3 ms from the end backwards: the earliest are made last.
				start := 3 * (tc.cues - 1 - i)
				fmt.Fprintf(&vtt, "00:00:%02d.%03d --> 00:00:%02d.%03d\nkill\n\n", start/1000, start%1000, (start+3)/1000, (start+3)%1000)
			}
			a := newAnalyzer(t, tools, Config{}, nil)
			peak := 0
			a.notePeakHits = func(n int) { peak = n }
			got, err := a.AnalyzeMedia(context.Background(), domain.MediaInput{
				Kind: domain.MediaAudio, Data: data, HasCaptions: true, Captions: vtt.String(),
			}, nil, compile(t, policy.String()))
			require.NoError(t, err)
			require.Len(t, got.Hits, tc.wantHits)
			require.LessOrEqual(t, peak, tc.maxPeak, "hits held at once")
			require.Equal(t, tc.cut, got.Report.HitsTruncated)
			require.Len(t, got.Report.LabelMatches, tc.labels, "every label's verdict is whole")
			for i, h := range got.Hits {
				if i > 0 {
					require.LessOrEqual(t, got.Hits[i-1].StartMs, h.StartMs, "in timeline order")
				}
			}
			if tc.cut {
				// The earliest are kept: 4096 hits of 20 labels are the first 205 cues'.
				require.Equal(t, int64(3*((domain.MaxTimedHitsPerItem-1)/tc.labels)), got.Hits[len(got.Hits)-1].StartMs)
			}
		})
	}
}
