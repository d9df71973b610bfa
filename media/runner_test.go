package media

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunnerKillsProcessGroup: a timeout kills the tool and everything it
// started, promptly.
func TestRunnerKillsProcessGroup(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	r := &runner{}
	start := time.Now()
	err = r.run(context.Background(), command{
		path:    sh,
		args:    []string{"-c", "sleep 30 & echo $! > " + pidFile + "; wait"},
		timeout: 300 * time.Millisecond,
	})
	var te *toolTimeoutError
	require.ErrorAs(t, err, &te)
	require.Less(t, time.Since(start), 5*time.Second)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var pid int
	_, err = fmt.Sscan(string(b), &pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !processAlive(pid) }, 5*time.Second, 20*time.Millisecond,
		"the tool's child outlived the timeout")
}

func TestRunnerBoundsOutput(t *testing.T) {
	t.Parallel()
	yes, err := exec.LookPath("yes")
	if err != nil {
		t.Skip("no yes")
	}
	var sink limitedSink
	err = (&runner{}).run(context.Background(), command{path: yes, stdout: &sink, maxStdout: 1 << 20, timeout: 10 * time.Second})
	require.ErrorIs(t, err, errOutputTooLarge)
	require.LessOrEqual(t, sink.n, 1<<20)
}

func TestRunnerLimits(t *testing.T) {
	t.Parallel()
	tools := FindTools()
	sh, err := exec.LookPath("sh")
	if err != nil || tools.Prlimit == "" || tools.Nice == "" {
		t.Skip("sh, prlimit or nice missing")
	}
	r := &runner{limits: ProcessLimits{Nice: 7, AddressSpace: 1 << 30, CPUSeconds: 60, FileSize: 1 << 20}, prlimit: tools.Prlimit, nice: tools.Nice}
	var out limitedSink
	require.NoError(t, r.run(context.Background(), command{path: sh, args: []string{"-c", "nice; ulimit -v; ulimit -t; ulimit -f"}, stdout: &out, maxStdout: 1 << 10}))
	base := 0
	if b, err := exec.Command("nice").Output(); err == nil {
		_, _ = fmt.Sscan(string(b), &base)
	}
	require.Equal(t, fmt.Sprintf("%d\n%d\n60\n%d\n", min(base+7, 19), (1<<30)/1024, (1<<20)/512), string(out.b))
}

type limitedSink struct {
	n int
	b []byte
}

func (s *limitedSink) Write(p []byte) (int, error) {
	s.n += len(p)
	s.b = append(s.b, p...)
	return len(p), nil
}
