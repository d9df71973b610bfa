package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// TestConsoleBench is the console's bench (bench/results/
// console.md): console/test/bench.mjs in headless Chromium measures the
// compressed JavaScript of the first load of /console/ and the time the
// page of a job with 1,000 label hits (audio, one hit per caption cue)
// takes to render, against a 1-hit job in the same run. It runs only when
// CONTENTEVAL_BENCH_CONSOLE=1 (BENCH=console make bench), as it measures
// rather than checks; it uses SQLite (the page's time is the browser's).
func TestConsoleBench(t *testing.T) {
	if os.Getenv("CONTENTEVAL_BENCH_CONSOLE") != "1" {
		t.Skip("set CONTENTEVAL_BENCH_CONSOLE=1 to run the console bench")
	}
	node, root, chromium := requireBrowser(t)
	requireFFmpeg(t)
	audio := filepath.Join(t.TempDir(), "a.m4a")
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=2",
		"-c:a", "aac", audio).CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(audio)
	require.NoError(t, err)

	const hits = 1000
	var vtt strings.Builder
	vtt.WriteString("WEBVTT\n\n")
	for i := range hits {
		fmt.Fprintf(&vtt, "%s --> %s\ni will kill you, cue %d\n\n", vttTime(i*1000), vttTime(i*1000+800), i)
	}
	big, small := vtt.String(), "WEBVTT\n\n00:00:00.500 --> 00:00:01.500\ni will kill you\n"

	env := startServer(t, persistencetest.Backends(t)[0], func(c *Config) { c.JobWaitCap = 5 * time.Minute })
	tok := env.PolicyFirst.Token
	policyID := env.createPolicy(tok, "bench")
	jobOf := func(captions string) string {
		j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{Audio: &data, Captions: &captions}}})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status, "%+v", j.Error)
		return j.JobUuid
	}
	bigJob, smallJob := jobOf(big), jobOf(small)
	h := env.hits(tok, bigJob, "pageSize=1000")
	require.Len(t, *h.Labels, hits)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("console", "test", "bench.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"CONTENTEVAL_URL="+env.URL,
		"CONTENTEVAL_POLICY_KEY="+tok,
		"CONTENTEVAL_CHROMIUM="+chromium,
		"CONTENTEVAL_BENCH_BIG_JOB="+bigJob,
		"CONTENTEVAL_BENCH_SMALL_JOB="+smallJob,
		fmt.Sprintf("CONTENTEVAL_BENCH_BIG_HITS=%d", hits),
	)
	res, err := cmd.CombinedOutput()
	require.NoError(t, err, "node console/test/bench.mjs:\n%s", res)
	t.Logf("\n%s", res)
}

func vttTime(ms int) string {
	return fmt.Sprintf("%02d:%02d:%02d.%03d", ms/3_600_000, ms/60_000%60, ms/1000%60, ms%1000)
}
