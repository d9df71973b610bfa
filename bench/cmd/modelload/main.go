// Command modelload measures the model backend path on one
// `contenteval serve` binary (SQLite) whose backends file points at fake
// model servers in this process (modelbackendtest, speaking HTTP):
//
//	(a) overhead: sync jobs through a backend that answers at once (cache
//	    off) against the built-in evaluators, same policy, alternating
//	    rounds; server CPU per item and latency;
//	(b) throughput: async jobs through a backend answering in 50 ms with
//	    maxConcurrency 16, against the bound 16 / 0.05 s x signals-per-call /
//	    signals-per-item (target: at least 80%);
//	(c) cache: backend calls per item on a repeated-content workload, with
//	    and without the cache.
//
//	go run ./bench/cmd/modelload [-bin PATH] [-out bench/results/model.md]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/bench"
	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
)

// signalsPerItem concepts, one label each, none decided by a built-in
// signal: every one goes to the model.
const signalsPerItem = 4

func policyText() string {
	var b strings.Builder
	for i := range signalsPerItem {
		fmt.Fprintf(&b, "LABEL \"model-%d\" {\n    \"violent threat number %d\"\n    =(\"forbidden phrase %d\")\n}\n", i, i, i)
	}
	return b.String()
}

type options struct {
	bin         string
	workers     int
	duration    time.Duration
	rounds      int
	asyncJobs   int
	slowLatency time.Duration
	out         string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "contenteval binary (default: build ./cmd/contenteval)")
	flag.IntVar(&o.workers, "c", 16, "closed-loop workers of the overhead phases")
	flag.DurationVar(&o.duration, "d", 5*time.Second, "each overhead phase")
	flag.IntVar(&o.rounds, "rounds", 3, "built-in then model overhead phases")
	flag.IntVar(&o.asyncJobs, "jobs", 2000, "async jobs of each throughput phase")
	flag.DurationVar(&o.slowLatency, "latency", 50*time.Millisecond, "the slow fake's answer time")
	flag.StringVar(&o.out, "out", "", "also write the results as Markdown to this file")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "modelload:", err)
		os.Exit(1)
	}
}

// never decides nothing is met, so every label is FALSE and nothing short-
// circuits the model calls.
func never(string, string) float64 { return 0.1 }

func run(o options) error {
	zero := modelbackendtest.New(modelbackendtest.LMStudio, never)
	defer zero.Close()
	slow2 := modelbackendtest.New(modelbackendtest.LMStudio, never)
	defer slow2.Close()
	slow2.Latency = o.slowLatency
	slow4 := modelbackendtest.New(modelbackendtest.LMStudio, never)
	defer slow4.Close()
	slow4.Latency = o.slowLatency
	cached := modelbackendtest.New(modelbackendtest.LMStudio, never)
	defer cached.Close()
	uncached := modelbackendtest.New(modelbackendtest.LMStudio, never)
	defer uncached.Close()
	file := filepath.Join(os.TempDir(), fmt.Sprintf("modelload-%d.yaml", os.Getpid()))
	defer os.Remove(file)
	backends := fmt.Sprintf(`backends:
  - {name: zero, url: %s, model: fake, profile: generic, bundleSize: 4, maxConcurrency: 64, cacheTTL: 0s}
  - {name: slow2, url: %s, model: fake, profile: generic, bundleSize: 2, maxConcurrency: 16, cacheTTL: 0s}
  - {name: slow4, url: %s, model: fake, profile: generic, bundleSize: 4, maxConcurrency: 16, cacheTTL: 0s}
  - {name: cached, url: %s, model: fake, profile: generic, bundleSize: 4}
  - {name: uncached, url: %s, model: fake, profile: generic, bundleSize: 4, cacheTTL: 0s}
`, zero.BaseURL(), slow2.BaseURL(), slow4.BaseURL(), cached.BaseURL(), uncached.BaseURL())
	if err := os.WriteFile(file, []byte(backends), 0o600); err != nil {
		return err
	}
	srv, err := bench.StartServer(o.bin, "--backends-file="+file, "--job-workers=48", "--job-poll-interval=20ms")
	if err != nil {
		return err
	}
	defer srv.Stop()
	c := &client{base: srv.Base, token: srv.Token, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
	policyID, err := c.createPolicy(policyText())
	if err != nil {
		return err
	}
	report := &progress{}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(report, "## Model backends, %s\n\nMachine load at start: %s\n", time.Now().Format("2006-01-02 15:04"), strings.TrimSpace(string(load)))

	// (a) Overhead per item.
	fmt.Fprintf(report, "\n### (a) overhead per item: a 0 ms fake vs the built-in path\n\n%d sync jobs in flight, one 1 KiB text item, %d model signals per item in one call, cache off.\n\n", o.workers, signalsPerItem)
	report.WriteString("| round | path | items/s | mean latency | server CPU/item |\n|---|---|---|---|---|\n")
	var seq atomic.Int64
	text := func() string {
		n := seq.Add(1)
		return fmt.Sprintf("item %d: ", n) + strings.Repeat("a perfectly ordinary sentence about the weather. ", 25)[:1000]
	}
	phase := func(stack string) (rps float64, mean, cpu time.Duration, err error) {
		var done atomic.Int64
		var total atomic.Int64
		var firstErr atomic.Value
		deadline := time.Now().Add(o.duration)
		cpu0 := bench.ProcessCPU(srv.Cmd.Process.Pid)
		var wg sync.WaitGroup
		for range o.workers {
			wg.Go(func() {
				for time.Now().Before(deadline) {
					start := time.Now()
					if err := c.syncJob(policyID, stack, text()); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					total.Add(int64(time.Since(start)))
					done.Add(1)
				}
			})
		}
		wg.Wait()
		if e := firstErr.Load(); e != nil {
			return 0, 0, 0, e.(error)
		}
		n := done.Load()
		return float64(n) / o.duration.Seconds(), time.Duration(total.Load() / max(n, 1)),
			(bench.ProcessCPU(srv.Cmd.Process.Pid) - cpu0) / time.Duration(max(n, 1)), nil
	}
	for _, s := range []string{"builtin", "zero"} { // warm-up
		if _, _, _, err := phase(s); err != nil {
			return err
		}
	}
	var cpuB, cpuM, latB, latM time.Duration
	for r := range o.rounds {
		for _, s := range []string{"builtin", "zero"} {
			rps, mean, cpu, err := phase(s)
			if err != nil {
				return err
			}
			fmt.Fprintf(report, "| %d | %s | %.0f | %s | %s |\n", r+1, s, rps, mean.Round(10*time.Microsecond), cpu.Round(10*time.Microsecond))
			if s == "builtin" {
				cpuB, latB = cpuB+cpu, latB+mean
			} else {
				cpuM, latM = cpuM+cpu, latM+mean
			}
		}
	}
	rd := time.Duration(o.rounds)
	fmt.Fprintf(report, "\nOverhead of the model path per item (means over rounds): server CPU %s (%s vs %s), latency %s (%s vs %s).\n",
		((cpuM - cpuB) / rd).Round(time.Microsecond), (cpuM / rd).Round(time.Microsecond), (cpuB / rd).Round(time.Microsecond),
		((latM - latB) / rd).Round(10*time.Microsecond), (latM / rd).Round(10*time.Microsecond), (latB / rd).Round(10*time.Microsecond))

	// (b) Throughput against the concurrency bound.
	fmt.Fprintf(report, "\n### (b) async throughput: fake answering in %s, maxConcurrency 16\n\n", o.slowLatency)
	report.WriteString("| backend | signals/call | bound items/s | measured items/s | of bound |\n|---|---|---|---|---|\n")
	for _, t := range []struct {
		stack   string
		fake    *modelbackendtest.Server
		perCall int
	}{{"slow2", slow2, 2}, {"slow4", slow4, 4}} {
		bound := 16 / o.slowLatency.Seconds() * float64(t.perCall) / signalsPerItem
		rate, err := c.asyncThroughput(policyID, t.stack, t.fake, o.asyncJobs, signalsPerItem/t.perCall, text)
		if err != nil {
			return err
		}
		fmt.Fprintf(report, "| %s | %d | %.0f | %.1f | %.0f%% |\n", t.stack, t.perCall, bound, rate, 100*rate/bound)
	}

	// (c) The cache on repeated content.
	const jobs, distinct = 600, 30
	fmt.Fprintf(report, "\n### (c) backend calls per item, %d sync jobs over %d distinct texts\n\n| backend | calls | calls/item |\n|---|---|---|\n", jobs, distinct)
	for _, t := range []struct {
		stack string
		fake  *modelbackendtest.Server
	}{{"cached", cached}, {"uncached", uncached}} {
		for i := range jobs {
			if err := c.syncJob(policyID, t.stack, fmt.Sprintf("repeated text number %d", i%distinct)); err != nil {
				return err
			}
		}
		fmt.Fprintf(report, "| %s | %d | %.3f |\n", t.stack, t.fake.Calls(), float64(t.fake.Calls())/jobs)
	}
	if o.out != "" {
		f, err := os.OpenFile(o.out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.WriteString(f, "\n"+report.String())
		return err
	}
	return nil
}

// progress is the Markdown report, also printed as it is written so a
// long run shows where it is.
type progress struct{ strings.Builder }

func (p *progress) Write(b []byte) (int, error) {
	os.Stdout.Write(b)
	return p.Builder.Write(b)
}

func (p *progress) WriteString(s string) (int, error) { return p.Write([]byte(s)) }

type client struct {
	base, token string
	http        *http.Client
}

func (c *client) post(path string, body any) ([]byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, out)
	}
	return out, err
}

func (c *client) createPolicy(text string) (string, error) {
	out, err := c.post("/v1/policies", map[string]string{"policyKey": "model", "text": text})
	if err != nil {
		return "", err
	}
	var r struct {
		Policy struct {
			PolicyID string `json:"policyId"`
		} `json:"policy"`
	}
	return r.Policy.PolicyID, json.Unmarshal(out, &r)
}

// syncJob runs one job and checks that the model answered: a FAILED
// result would mean the measurement measured failures.
func (c *client) syncJob(policyID, stack, text string) error {
	out, err := c.post("/v1/jobs", jobBody(policyID, stack, text, true))
	if err != nil {
		return err
	}
	if bytes.Contains(out, []byte("OUTCOME_FAILED")) || !bytes.Contains(out, []byte("JOB_STATUS_COMPLETED")) {
		return fmt.Errorf("job did not complete cleanly: %.300s", out)
	}
	return nil
}

func jobBody(policyID, stack, text string, wait bool) map[string]any {
	return map[string]any{"policyId": policyID, "waitForCompletion": wait,
		"options":     map[string]any{"options": map[string]string{"stack": stack}},
		"contentData": []map[string]string{{"text": text}}}
}

// asyncThroughput submits n async jobs and measures items/s from the fake's
// calls between 10% and 90% of the calls the jobs make (callsPerItem each),
// so neither the submission's start nor the drain's tail counts.
func (c *client) asyncThroughput(policyID, stack string, fake *modelbackendtest.Server, n, callsPerItem int, text func() string) (float64, error) {
	base := fake.Calls()
	want := int64(n * callsPerItem)
	errc := make(chan error, 1)
	go func() {
		var wg sync.WaitGroup
		next := make(chan struct{})
		for range 16 {
			wg.Go(func() {
				for range next {
					if _, err := c.post("/v1/jobs", jobBody(policyID, stack, text(), false)); err != nil {
						select {
						case errc <- err:
						default:
						}
					}
				}
			})
		}
		for range n {
			next <- struct{}{}
		}
		close(next)
		wg.Wait()
	}()
	mark := func(frac float64) (time.Time, error) {
		target := base + int64(float64(want)*frac)
		deadline := time.Now().Add(10 * time.Minute)
		for fake.Calls() < target {
			select {
			case err := <-errc:
				return time.Time{}, err
			default:
			}
			if time.Now().After(deadline) {
				return time.Time{}, fmt.Errorf("%s: %d of %d calls after 10 minutes", stack, fake.Calls()-base, want)
			}
			time.Sleep(2 * time.Millisecond)
		}
		return time.Now(), nil
	}
	t10, err := mark(0.1)
	if err != nil {
		return 0, err
	}
	t90, err := mark(0.9)
	if err != nil {
		return 0, err
	}
	if _, err := mark(1); err != nil {
		return 0, err
	}
	return 0.8 * float64(n) / t90.Sub(t10).Seconds(), nil
}
