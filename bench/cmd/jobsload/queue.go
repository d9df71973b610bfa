package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/bench"
)

// The queue drain (-queue N, fair claiming): the throughput of the asynchronous
// path, which the synchronous load above never takes (its jobs are
// evaluated in the request and never claimed). N one-item jobs, spread
// round robin over -accounts accounts, are queued on a server that runs no
// workers (--role=api); then one worker process (--role=worker, the default
// 8 workers) is started and timed until every job is terminal. What it
// measures per job: a share of a claim, the evaluation, the lease renewal
// ticker and the FinishJob transaction.

// queueResult is one backend's drain.
type queueResult struct {
	jobs, accounts int
	submit, drain  time.Duration
	submitErrors   uint64
	cpu            cpuPerRequest // of the worker process, per job
}

func (q queueResult) rate() float64 { return float64(q.jobs) / q.drain.Seconds() }

// drainQueue runs the drain against the API server at base, which already
// has the account of token with policyID.
func drainQueue(o options, bin, dataDir, dbURL, base string, client *http.Client, token, policyID, text string) (queueResult, error) {
	r := queueResult{jobs: o.queue, accounts: max(1, o.accounts)}
	tokens, policies := []string{token}, []string{policyID}
	for i := 1; i < r.accounts; i++ {
		acct, err := bench.CLI(bin, dataDir, dbURL, "accounts", "create", "--name", fmt.Sprintf("bench-%d", i), "--type", "policy-first")
		if err != nil {
			return r, err
		}
		key, err := bench.CLI(bin, dataDir, dbURL, "keys", "create", "--account", acct["accountId"].(string))
		if err != nil {
			return r, err
		}
		tok := key["token"].(string)
		pid, err := bench.CreatePolicy(client, base, tok)
		if err != nil {
			return r, err
		}
		tokens, policies = append(tokens, tok), append(policies, pid)
	}
	bodies := make([][]byte, r.accounts)
	hdrs := make([]http.Header, r.accounts)
	for i := range bodies {
		bodies[i], _ = json.Marshal(map[string]any{"policyId": policies[i], "contentData": []map[string]string{{"text": text}}})
		hdrs[i] = http.Header{"Authorization": {"Bearer " + tokens[i]}, "Content-Type": {"application/json"}}
	}

	start := time.Now()
	var next atomic.Int64
	var errs atomic.Uint64
	var wg sync.WaitGroup
	for range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= r.jobs {
					return
				}
				a := i % r.accounts
				if status, body, err := do(client, base+"/v1/jobs", hdrs[a], bodies[a]); err != nil || status != http.StatusOK {
					if errs.Add(1) == 1 {
						fmt.Fprintf(os.Stderr, "queue: submit: %d %s %v\n", status, body, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	r.submit, r.submitErrors = time.Since(start), errs.Load()

	worker := exec.Command(bin, "serve", "--role=worker", "--data-dir="+dataDir, "--database-url="+dbURL,
		"--log-level=error", "--no-migrate=true")
	worker.Stdout, worker.Stderr = io.Discard, os.Stderr
	start = time.Now()
	if err := worker.Start(); err != nil {
		return r, err
	}
	defer func() { _ = worker.Process.Signal(os.Interrupt); _ = worker.Wait() }()
	cpu0 := readCPU(worker.Process.Pid)
	for {
		left, err := unfinished(client, base, hdrs)
		if err != nil {
			return r, err
		}
		if left == 0 {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return r, fmt.Errorf("queue: %d jobs still unfinished after 10 minutes", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.drain = time.Since(start)
	r.cpu = readCPU(worker.Process.Pid).since(cpu0, uint64(r.jobs))
	return r, nil
}

// unfinished reports whether any account still has a pending or running
// job (1 or 0: one listed job is enough to know).
func unfinished(client *http.Client, base string, hdrs []http.Header) (int, error) {
	for _, h := range hdrs {
		for _, st := range []string{"JOB_STATUS_PENDING", "JOB_STATUS_RUNNING"} {
			status, body, err := doGet(client, base+"/v1/jobs?pageSize=1&query.status="+st, h)
			if err != nil || status != http.StatusOK {
				return 0, fmt.Errorf("list jobs: %d %s %v", status, body, err)
			}
			var page struct {
				Jobs []json.RawMessage `json:"jobs"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				return 0, err
			}
			if len(page.Jobs) > 0 {
				return 1, nil
			}
		}
	}
	return 0, nil
}

func doGet(c *http.Client, u string, hdr http.Header) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header = hdr.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func queueMarkdown(o options, rs []result) string {
	var b []byte
	b = fmt.Appendf(b, "## Queue drain: %d asynchronous one-item jobs of %d accounts, one worker process\n\n", o.queue, max(1, o.accounts))
	b = fmt.Appendf(b, "`go run ./bench/cmd/jobsload -queue %d -accounts %d -c %d` on %s.\n\n", o.queue, max(1, o.accounts), o.workers, time.Now().UTC().Format("2006-01-02 15:04 MST"))
	b = fmt.Appendf(b, "| backend | submitted in | submit errors | drained in | jobs/s | worker CPU per job | PostgreSQL CPU per job | machine busy |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		q := r.queue
		b = fmt.Appendf(b, "| %s | %.2f s | %d | %.2f s | %.0f | %s | %s | %.0f%% |\n", r.backend, q.submit.Seconds(), q.submitErrors,
			q.drain.Seconds(), q.rate(), ms(q.cpu.server), ms(q.cpu.postgres), 100*q.cpu.busy)
	}
	return string(b)
}
