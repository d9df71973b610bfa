package media

import (
	"context"
	"github.com/contenteval/contenteval/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// requireTools returns the installed tools, or skips the test when ffmpeg is
// missing — except under CI=true, where a missing ffmpeg fails it: CI
// installs it (make media-tools), so a skip there would hide a broken setup.
func requireTools(t testing.TB) Tools {
	t.Helper()
	tools := FindTools()
	if !tools.VideoReady() {
		testenv.SkipUnlessCI(t, "%v not installed (make media-tools)", tools.MissingForMedia())
	}
	return tools
}

// requireASR is requireTools for speech recognition.
func requireASR(t testing.TB) Tools {
	t.Helper()
	tools := requireTools(t)
	if !tools.ASRReady() {
		testenv.SkipUnlessCI(t, "%v not installed (make media-tools)", tools.MissingForASR())
	}
	return tools
}

// ffmpeg runs ffmpeg to generate test media.
func ffmpeg(t testing.TB, tools Tools, args ...string) {
	t.Helper()
	out, err := exec.Command(tools.FFmpeg, append([]string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y"}, args...)...).CombinedOutput()
	require.NoError(t, err, "ffmpeg %v: %s", args, out)
}

// newAnalyzer returns an analyzer staging into a directory of its own and
// checks, when the test ends, that every staged file was removed.
func newAnalyzer(t testing.TB, tools Tools, cfg Config, f Fetcher) *Analyzer {
	t.Helper()
	cfg.TempDir = filepath.Join(t.TempDir(), "staging")
	require.NoError(t, os.Mkdir(cfg.TempDir, 0o700))
	t.Cleanup(func() {
		left, err := os.ReadDir(cfg.TempDir)
		require.NoError(t, err)
		require.Empty(t, left, "staged media left behind")
	})
	return New(cfg, tools, f)
}

// compile returns the evaluation callback of a policy document.
func compile(t testing.TB, policy string) domain.MediaEvalFunc {
	t.Helper()
	plan, err := rules.Compile(policy, rules.CompileOptions{})
	require.NoError(t, err)
	return func(ctx context.Context, c rules.Content) (*rules.Report, error) {
		return plan.Evaluate(ctx, c, rules.EvalOptions{Threshold: 0.5})
	}
}

func msp(v int64) *int64 { return &v }

// reasonOf returns the JobErrorReason of a media failure.
func reasonOf(t testing.TB, err error) domain.JobErrorReason {
	t.Helper()
	require.Error(t, err)
	me, ok := domain.MediaErrorOf(err)
	require.True(t, ok, "not a media error: %v", err)
	return me.Reason
}
