package handlers

import (
	"fmt"
	"testing"
)

// The hand-written timecode formatter agrees with the obvious fmt version.
func TestTimecode(t *testing.T) {
	t.Parallel()
	for _, v := range []int64{0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, 36_000_000, 359_999_999, 360_000_000, 123_456_789_012} {
		want := fmt.Sprintf("%02d:%02d:%02d.%03d", v/3_600_000, v/60_000%60, v/1000%60, v%1000)
		if got := timecode(v); got != want {
			t.Errorf("timecode(%d) = %s, want %s", v, got, want)
		}
	}
	if got := timecode(-5); got != "00:00:00.000" {
		t.Errorf("timecode(-5) = %s", got)
	}
}
