package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evalMemoryLabels is how many labels of the attack policy match every
// item: each label's one rule matches every word of the text, so every
// section is TRUE and every rule locates hundreds of spans.
const evalMemoryLabels = 300

// evalMemoryScale is the size of the attack: the reduced scale the test
// runs by default, or the scale of the finding with
// CONTENTEVAL_EVALMEM_SCALE=full (8 synchronous jobs, 20 streams).
type evalMemoryScale struct {
	items, textBytes   int
	syncJobs, streams  int
	streamWriteTimeout string
}

// The finding's body was 6.1 MiB for 100 items: texts of 64,000 bytes.
// CONTENTEVAL_EVALMEM_TEXT_BYTES sets another size (the report is the same
// past a few KiB: every signal's located matches are capped).
func evalMemoryScaleFromEnv(t *testing.T) evalMemoryScale {
	s := evalMemoryScale{items: 100, textBytes: 64_000, syncJobs: 2, streams: 3, streamWriteTimeout: "3s"}
	if os.Getenv("CONTENTEVAL_EVALMEM_SCALE") == "full" {
		s.syncJobs, s.streams = 8, 20
	}
	if v := os.Getenv("CONTENTEVAL_EVALMEM_TEXT_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		s.textBytes = n
	}
	return s
}

// TestEvaluationMemory sends the evaluation-amplification attack to a real
// server process and holds its peak RSS (VmHWM) to the promise of
// docs/api.md#limits: one request's peak stays under 8x its body plus 64 MiB,
// and concurrent requests under the sum of theirs. A policy of 300 labels
// that all match, and 100 texts of 16 KiB full of matches: each item's
// report located 153,600 spans, 3.9 MB of stored report per item, and 8
// such synchronous jobs (6.1 MiB bodies) took the server to 3.3 GB; 20 streams whose
// clients never read took it to 9.7 GB, each stream holding every report
// it had evaluated. CONTENTEVAL_EVALMEM_BIN measures another build (a
// baseline) with the same test.
func TestEvaluationMemory(t *testing.T) {
	skipWithoutPeakRSS(t, "builds the binary and evaluates 100-item jobs against 300 labels")
	scale := evalMemoryScaleFromEnv(t)
	env := setupEvalMemory(t)
	text := strings.Repeat("lorem ipsum ", scale.textBytes/12+1)[:scale.textBytes]
	texts := make([]string, scale.items)
	for i := range texts {
		texts[i] = `{"text":"` + text + `"}`
	}
	content := `"contentData":[` + strings.Join(texts, ",") + `]`

	t.Run("synchronous jobs", func(t *testing.T) {
		body := `{"policyId":"` + env.syncPolicy + `","waitForCompletion":true,` + content + `}`
		srv := env.start(t, scale)
		before := srv.peakRSS(t)
		var wg sync.WaitGroup
		results := make([]memResult, scale.syncJobs)
		for i := range results {
			wg.Go(func() { results[i] = srv.postPath(env.token, "/v1/jobs", body) })
		}
		wg.Wait()
		after := srv.peakRSS(t)
		checkEvalMemoryGrowth(t, "synchronous jobs", before, after, scale.syncJobs, len(body), 8)
		for _, r := range results {
			require.Equal(t, http.StatusOK, r.status, "%.300s", r.body)
			checkEvalMemoryVerdicts(t, r.body, scale.items)
		}
	})

	t.Run("streams not read", func(t *testing.T) {
		body := `{"policyId":"` + env.streamPolicy + `",` + content + `}`
		srv := env.start(t, scale)
		before := srv.peakRSS(t)
		var wg sync.WaitGroup
		for range scale.streams {
			wg.Go(func() {
				conn := openUnreadStream(t, srv.url, env.token, body)
				t.Cleanup(func() { _ = conn.Close() })
			})
		}
		wg.Wait()
		// The server gives up on each client at its write timeout (or the
		// stream fits the socket buffers and completes): either way its job
		// ends without the client reading past the headers.
		srv.waitUntilNoJobRuns(t, env.token, env.streamPolicy)
		after := srv.peakRSS(t)
		checkEvalMemoryGrowth(t, "streams not read", before, after, scale.streams, len(body), 8)
	})
}

type evalMemoryEnv struct {
	bin, dir, dbURL, keyFile string
	token                    string
	syncPolicy, streamPolicy string
	warmPolicy               string
}

// setupEvalMemory prepares a SQLite database with one account, its key and
// the attack policy (one copy per case, so each case counts its own jobs).
func setupEvalMemory(t *testing.T) *evalMemoryEnv {
	t.Helper()
	env := &evalMemoryEnv{bin: os.Getenv("CONTENTEVAL_EVALMEM_BIN")}
	if env.bin == "" {
		env.bin = buildBinary(t)
	}
	var policy strings.Builder
	for i := range evalMemoryLabels {
		fmt.Fprintf(&policy, "LABEL \"L%03d\" {\n  ANY(=(\"lorem\"), =(\"ipsum\"))\n}\n", i)
	}
	db := setupMemoryDB(t, "evalmem", "", func(ctx context.Context, m *Main, a *domain.Account) {
		for key, id := range map[string]*string{"sync": &env.syncPolicy, "stream": &env.streamPolicy, "warm": &env.warmPolicy} {
			createPolicy(t, key, policy.String(), id)(ctx, m, a)
		}
	})
	env.dir, env.dbURL, env.keyFile, env.token = db.dir, db.dbURL, db.keyFile, db.token
	return env
}

// start runs a server with no queue workers (synchronous jobs and streams
// run in the request) and warms the evaluation path, so that lazy
// initialisation is not counted.
func (e *evalMemoryEnv) start(t *testing.T, scale evalMemoryScale) *memServer {
	t.Helper()
	flags := []string{"--job-wait-cap=10m", "--stream-write-timeout=" + scale.streamWriteTimeout}
	if os.Getenv("CONTENTEVAL_EVALMEM_BIN") != "" {
		// A baseline build without the flag: its streams give up on a
		// client after their fixed 2 minutes.
		flags = flags[:1]
	}
	srv := startProcess(t, e.bin, e.dir, e.dbURL, e.keyFile, flags...)
	r := srv.postPath(e.token, "/v1/jobs", `{"policyId":"`+e.warmPolicy+`","waitForCompletion":true,"contentData":[{"text":"lorem ipsum"}]}`)
	require.Equal(t, http.StatusOK, r.status, "%.300s", r.body)
	return srv
}

// checkEvalMemoryGrowth holds the growth of the peak RSS to factor times
// the bodies plus 64 MiB (the promise is factor 8). It fails with Error, so
// that the verdicts are checked too.
func checkEvalMemoryGrowth(t *testing.T, name string, before, after int64, requests, body, factor int) {
	t.Helper()
	growth := after - before
	bound := int64(requests)*int64(factor)*int64(body) + 64<<20
	t.Logf("%s: %d x %.1f MiB body, peak RSS %.0f -> %.0f MiB, growth %.0f MiB (bound %.0f MiB)",
		name, requests, mib(int64(body)), mib(before), mib(after), mib(growth), mib(bound))
	assert.Less(t, growth, bound, "peak RSS grew %.0f MiB for %d x %.1f MiB", mib(growth), requests, mib(int64(body)))
}

// checkEvalMemoryVerdicts checks that whatever the report left out, the
// verdict of every item is whole: TRUE, with every label matched.
func checkEvalMemoryVerdicts(t *testing.T, body []byte, items int) {
	t.Helper()
	var resp struct {
		Job struct {
			Status  string
			Error   *struct{ Reason, Message string }
			Results []struct {
				Report struct {
					Result       string
					LabelMatches map[string]float64
					Truncation   *struct{ Message string }
				}
			}
		}
	}
	require.NoError(t, json.Unmarshal(body, &resp))
	job := resp.Job
	require.Equal(t, "JOB_STATUS_COMPLETED", job.Status, "%+v", job.Error)
	require.Len(t, job.Results, items)
	for _, r := range job.Results {
		require.Equal(t, "OUTCOME_TRUE", r.Report.Result)
		require.Len(t, r.Report.LabelMatches, evalMemoryLabels)
		require.NotNil(t, r.Report.Truncation, "the report left spans out without saying so")
		require.Contains(t, r.Report.Truncation.Message, "at most 16 spans per rule and 256 in all")
	}
}

// openUnreadStream starts POST /v1/jobs/stream on a connection whose
// client reads the response's headers (so its job exists) and nothing
// more, with a small receive buffer so that the server meets back-pressure
// early rather than after megabytes of kernel buffers. It runs in its own
// goroutine: failures are errors, not FailNow.
func openUnreadStream(t *testing.T, base, token, body string) net.Conn {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Error(err)
		return nopConn{}
	}
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "POST /v1/jobs/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		strings.TrimPrefix(base, "http://"), token, len(body), body)
	if err := w.Flush(); err != nil {
		t.Error(err)
		return conn
	}
	// Byte by byte, so that nothing past the headers is read.
	var head []byte
	one := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if _, err := conn.Read(one); err != nil {
			t.Errorf("reading the stream's headers: %v (%q)", err, head)
			return conn
		}
		head = append(head, one[0])
	}
	if !strings.HasPrefix(string(head), "HTTP/1.1 200") {
		t.Errorf("stream answered %q", head)
	}
	return conn
}

// nopConn stands for a connection that could not be opened.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }

// waitUntilNoJobRuns waits until no job of the policy is running. It asks
// for running jobs only: listing finished ones would read their results,
// whose memory the measurement would then count.
func (s *memServer) waitUntilNoJobRuns(t *testing.T, token, policyID string) {
	t.Helper()
	testwait.For(t, 10*time.Minute, "no job of policy "+policyID+" to run", func() (bool, error) {
		req, err := http.NewRequest(http.MethodGet, s.url+"/v1/jobs?query.status=JOB_STATUS_RUNNING&query.policyId="+policyID, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := specClient.Do(req)
		require.NoError(t, err)
		var page struct{ Jobs []json.RawMessage }
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		require.NoError(t, err)
		return len(page.Jobs) == 0, fmt.Errorf("%d jobs still run", len(page.Jobs))
	})
}
