// Command httpload is the issue-2 benchmark: in one process it serves a bare
// Echo handler and the full contenteval server (temporary SQLite database)
// on 127.0.0.1, drives both with the same closed-loop keep-alive load on the
// authenticated, validated cheap GET /v1/label-tags, and reports requests/s,
// p50 and p99 of each and the throughput ratio full/bare (target: >= 40%).
//
//	go run ./bench/cmd/httpload -c 16 -d 3s -warmup 1s -rounds 9
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/contenteval/contenteval/bench"
)

// targetRatio is the bar: the full path keeps at least this share of
// the bare handler's throughput.
const targetRatio = 0.40

type options struct {
	workers  int
	duration time.Duration
	warmup   time.Duration
	requests int
	rounds   int
}

func main() {
	var o options
	flag.IntVar(&o.workers, "c", 16, "concurrent keep-alive workers (closed loop)")
	flag.DurationVar(&o.duration, "d", 3*time.Second, "measured duration per target and round")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured warm-up per target and round")
	flag.IntVar(&o.requests, "n", 0, "stop a measured phase after this many requests (0: by duration only)")
	flag.IntVar(&o.rounds, "rounds", 9, "rounds; each drives both targets, alternating which goes first")
	flag.Parse()
	if o.rounds < 1 || o.rounds > 20 {
		fmt.Fprintln(os.Stderr, "httpload: -rounds must be 1..20")
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		os.Exit(1)
	}
}

type target struct {
	name   string
	url    string
	header http.Header
	status int
	total  bench.LoadResult
}

func run(ctx context.Context, w io.Writer, o options) error {
	dir, err := os.MkdirTemp("", "contenteval-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	full, err := bench.NewFull(ctx, dir)
	if err != nil {
		return fmt.Errorf("full server: %w", err)
	}
	defer full.Close()
	fullURL, stopFull, err := bench.Serve(full.Handler)
	if err != nil {
		return err
	}
	defer func() { _ = stopFull() }()
	bareURL, stopBare, err := bench.Serve(bench.BareHandler())
	if err != nil {
		return err
	}
	defer func() { _ = stopBare() }()

	auth := http.Header{"Authorization": {"Bearer " + full.Token}}
	bare := &target{name: "bare echo", url: bareURL + bench.CheapGETPath, status: http.StatusOK}
	fullT := &target{name: "full path", url: fullURL + bench.CheapGETPath, header: auth}

	// Probe: what the full path answers today, and that auth really runs.
	status, body, err := get(ctx, fullT.url, auth)
	if err != nil {
		return err
	}
	fullT.status = status
	var note string
	switch status {
	case http.StatusOK:
		note = "GET /v1/label-tags answered 200 {\"labelTags\":[]}: the full path includes the handler's\n" +
			"domain call, one SQLite read of the account's tags (an account with none)."
	case http.StatusNotImplemented:
		var st struct {
			Code int `json:"code"`
		}
		if json.Unmarshal(body, &st) != nil || st.Code != 12 {
			return fmt.Errorf("full path: 501 without a {code: 12} body: %s", body)
		}
		note = "GET /v1/label-tags still answers 501 {code: 12} (not implemented yet): every middleware\n" +
			"ran (request id, log, metrics, recover, operation, body limit, JWT auth, rate limit,\n" +
			"account-type gate, aliases, OpenAPI validation, strict handler) and the error funnel\n" +
			"wrote the body, but the handler does no domain work yet."
	default:
		return fmt.Errorf("full path: GET %s answered %d: %s", bench.CheapGETPath, status, body)
	}
	if s, _, err := get(ctx, fullT.url, nil); err != nil || s != http.StatusUnauthorized {
		return fmt.Errorf("full path without a token: status %d, err %v; want 401", s, err)
	}
	if s, _, err := get(ctx, bare.url, nil); err != nil || s != http.StatusOK {
		return fmt.Errorf("bare: status %d, err %v; want 200", s, err)
	}

	printMachine(w, o)
	fmt.Fprintln(w, note)
	fmt.Fprintln(w)

	var ratios []float64 // full/bare req/s of each round: the two ran back to back
	for round := 1; round <= o.rounds; round++ {
		order := []*target{bare, fullT}
		if round%2 == 0 {
			order = []*target{fullT, bare}
		}
		rps := map[*target]float64{}
		for _, t := range order {
			res, err := bench.Load(ctx, bench.LoadConfig{
				URL: t.url, Header: t.header, Workers: o.workers,
				Warmup: o.warmup, Duration: o.duration, Requests: o.requests, Status: t.status,
			})
			if err != nil {
				return err
			}
			rps[t] = res.RPS()
			fmt.Fprintf(w, "round %d  %-9s  %7.0f req/s  p50 %-8v  p99 %-8v  cpu/req %-7v  errors %d\n",
				round, t.name, res.RPS(), round3(res.Latency.Quantile(0.50)), round3(res.Latency.Quantile(0.99)),
				round3(res.CPUPerRequest()), res.Errors)
			if res.Errors > 0 {
				fmt.Fprintf(w, "  first error: %s\n", res.FirstError)
			}
			t.total.Merge(res)
		}
		ratios = append(ratios, rps[fullT]/rps[bare])
	}

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tstatus\trequests\treq/s\tp50\tp99\tmax\tCPU/req\terrors\t")
	for _, t := range []*target{bare, fullT} {
		r := &t.total
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%v\t%v\t%v\t%v\t%d\t\n", t.name, t.status, r.OK, r.RPS(),
			round3(r.Latency.Quantile(0.50)), round3(r.Latency.Quantile(0.99)), round3(r.Latency.Max()),
			round3(r.CPUPerRequest()), r.Errors)
	}
	tw.Flush()
	fmt.Fprintf(w, "load average at end: %s\n", loadAvg())

	overall := fullT.total.RPS() / bare.total.RPS()
	median := medianOf(ratios)
	verdict := "meets"
	if median < targetRatio {
		verdict = "BELOW"
	}
	fmt.Fprintf(w, "\nratio full/bare req/s: median of rounds %.1f%% (%s the %.0f%% target)", median*100, verdict, targetRatio*100)
	fmt.Fprintf(w, "; all rounds pooled %.1f%%; per round", overall*100)
	for _, r := range ratios {
		fmt.Fprintf(w, " %.1f%%", r*100)
	}
	fmt.Fprintln(w)
	if b, f := bare.total.CPUPerRequest(), fullT.total.CPUPerRequest(); b > 0 && f > 0 {
		fmt.Fprintf(w, "ratio by process CPU per request (bare/full, loader included): %.1f%%\n",
			100*float64(b)/float64(f))
	}
	if bare.total.Errors+fullT.total.Errors > 0 {
		return errors.New("some requests failed (see above)")
	}
	return nil
}

func medianOf(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func get(ctx context.Context, url string, h http.Header) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

func printMachine(w io.Writer, o options) {
	fmt.Fprintf(w, "machine: %s, %d CPUs, GOMAXPROCS %d, %s %s/%s\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "load: closed loop, %d keep-alive workers in this process (they share the CPUs with the server),\n", o.workers)
	fmt.Fprintf(w, "      %v warm-up + %v measured per target and round", o.warmup, o.duration)
	if o.requests > 0 {
		fmt.Fprintf(w, " (or %d requests)", o.requests)
	}
	fmt.Fprintf(w, ", %d rounds alternating the order\n", o.rounds)
	fmt.Fprintf(w, "load average at start: %s\n", loadAvg())
}

// loadAvg is the 1, 5 and 15 minute load average on Linux: other processes
// on the machine take CPU from the run, and this says how much.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel reads the CPU model name on Linux; elsewhere it says unknown.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func round3(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(time.Microsecond)
	default:
		return d
	}
}
