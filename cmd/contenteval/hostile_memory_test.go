package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHostileBodiesMemory sends ~30 MiB bodies built to amplify when decoded
// (ten million [] or {} in a field the server ignores, nesting 10 million
// deep) to a real server process and reads its peak RSS (VmHWM) before and
// after. docs/api.md#limits: one request's peak stays under 8x its body plus 64 MiB.
// Before the input guard the [] body answered 200 and took the server from
// 89 to 1,268 MiB. Bodies it serves are held to the
// same bound: one with a 30 MiB string it ignores, and a full job (100 texts
// of 256 KiB). Each case gets a fresh process: the
// Go runtime keeps freed memory, which would hide the next case's peak.
func TestHostileBodiesMemory(t *testing.T) {
	skipWithoutPeakRSS(t, "builds the binary and sends 30 MiB bodies")
	bin := buildBinary(t)
	var policyID string
	db := setupMemoryDB(t, "mem", "", createPolicy(t, "main", testPolicyText, &policyID))
	dir, dbURL, keyFile, token := db.dir, db.dbURL, db.keyFile, db.token

	const items = 10_000_000
	repeat := func(unit string) string {
		return strings.TrimSuffix(strings.Repeat(unit+",", items), ",")
	}
	job := `{"policyId":"` + policyID + `","contentData":[{"text":"hello"}],`
	texts := make([]string, 100)
	for i := range texts {
		texts[i] = `{"text":"` + strings.Repeat("lorem ipsum ", 256<<10/12) + `"}`
	}
	for _, tc := range []struct {
		name       string
		body       string
		concurrent int
		status     int
		field      string // the start of the field violation's name
	}{
		{"ten million []", job + `"ignored":[` + repeat("[]") + `]}`, 1, http.StatusBadRequest, "ignored["},
		{"ten million {}", job + `"ignored":[` + repeat("{}") + `]}`, 1, http.StatusBadRequest, "ignored["},
		{"ten million nested", job + `"ignored":` + strings.Repeat("[", items) + strings.Repeat("]", items) + `}`, 1, http.StatusBadRequest, "ignored["},
		{"six at once", job + `"ignored":[` + repeat("[]") + `]}`, 6, http.StatusBadRequest, "ignored["},
		// Served bodies: the request validator decoded them in place
		// (handlers.validateBody) where kin-openapi read and copied them
		// some twelve times, 303 MiB for this one.
		{"one 30 MiB string", job + `"ignored":"` + strings.Repeat("a", 3*items) + `"}`, 1, http.StatusOK, ""},
		// Before, 370 MiB: besides the validator, the job's input encoded
		// for storage was copied twice more (persistence.marshalJSON).
		{"a full job of 100 x 256 KiB", `{"policyId":"` + policyID + `","contentData":[` + strings.Join(texts, ",") + `]}`, 1, http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startProcess(t, bin, dir, dbURL, keyFile)
			// Warm the path first, so lazy initialisation is not counted.
			r := srv.post(token, job+`"ignored":[[],{}]}`)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			before := srv.peakRSS(t)

			var wg sync.WaitGroup
			results := make([]memResult, tc.concurrent)
			for i := range results {
				wg.Go(func() { results[i] = srv.post(token, tc.body) })
			}
			wg.Wait()
			after := srv.peakRSS(t)
			body := int64(len(tc.body))
			growth := after - before
			bound := int64(tc.concurrent)*8*body + 64<<20
			t.Logf("%s: body %.1f MiB x %d, peak RSS %.0f -> %.0f MiB, growth %.0f MiB (bound %.0f MiB)",
				tc.name, mib(body), tc.concurrent, mib(before), mib(after), mib(growth), mib(bound))
			for _, r := range results {
				require.Equal(t, tc.status, r.status, "%.300s", r.body)
				if tc.status == http.StatusOK {
					continue
				}
				var st struct {
					Details []struct {
						FieldViolations []struct{ Field string }
					}
				}
				require.NoError(t, json.Unmarshal(r.body, &st), "%.300s", r.body)
				require.NotEmpty(t, st.Details, "%.300s", r.body)
				require.NotEmpty(t, st.Details[0].FieldViolations, "%.300s", r.body)
				require.True(t, strings.HasPrefix(st.Details[0].FieldViolations[0].Field, tc.field), "%.300s", r.body)
			}
			require.Less(t, growth, bound, "peak RSS grew %.0f MiB for %d x %.1f MiB", mib(growth), tc.concurrent, mib(body))
		})
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

type memServer struct {
	cmd *exec.Cmd
	url string
}

type memResult struct {
	status int
	body   []byte
}

// startProcess runs `serve --role=api` (no workers: only the request path
// allocates) on the prepared database and waits until it is ready. Flags in
// extra come last, so they override these (--role=all for workers).
func startProcess(t *testing.T, bin, dir, dbURL, keyFile string, extra ...string) *memServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	args := append([]string{"serve", "--role=api", "--addr=" + addr, "--database-url=" + dbURL,
		"--data-dir=" + dir, "--jwt-key-file=" + keyFile, "--rate-rps=0", "--log-level=error"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	s := &memServer{cmd: cmd, url: "http://" + addr}
	registerContractHost(s.url)
	waitReady(t, s.url)
	return s
}

func (s *memServer) post(token, body string) memResult {
	return s.postPath(token, "/v1/jobs", body)
}

func (s *memServer) postPath(token, path, body string) memResult {
	req, err := http.NewRequest(http.MethodPost, s.url+path, strings.NewReader(body))
	if err != nil {
		return memResult{status: -1, body: []byte(err.Error())}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := specClient.Do(req)
	if err != nil {
		return memResult{status: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return memResult{status: resp.StatusCode, body: b}
}

// peakRSS is the process's VmHWM in bytes.
func (s *memServer) peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	require.NoError(t, err)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}
