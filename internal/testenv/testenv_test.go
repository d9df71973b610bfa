package testenv

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records instead of stopping the test.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()                        {}
func (r *recorder) Fatalf(format string, a ...any) { r.failed = fmt.Sprintf(format, a...) }
func (r *recorder) Skip(a ...any)                  { r.skipped = fmt.Sprint(a...) }

func TestSkipUnlessCI(t *testing.T) {
	tests := []struct {
		ci       string
		wantFail bool
	}{
		{ci: "", wantFail: false},
		{ci: "false", wantFail: false},
		{ci: "0", wantFail: false},
		{ci: "yes", wantFail: false}, // not a boolean strconv.ParseBool reads
		{ci: "true", wantFail: true},
		{ci: "TRUE", wantFail: true},
		{ci: "1", wantFail: true},
	}
	for _, tc := range tests {
		t.Run("CI="+tc.ci, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			r := &recorder{TB: t}
			SkipUnlessCI(r, "%s is missing", "the tool")
			if tc.wantFail {
				if r.failed != "CI=true but the tool is missing: CI must provide it" || r.skipped != "" {
					t.Fatalf("failed %q, skipped %q: want a failure under CI", r.failed, r.skipped)
				}
				return
			}
			if r.skipped != "the tool is missing" || r.failed != "" {
				t.Fatalf("failed %q, skipped %q: want a skip outside CI", r.failed, r.skipped)
			}
		})
	}
}
