// Command jobsload is the synchronous job load test: POST /v1/jobs with
// waitForCompletion, one 1 KiB text item, against a 20-label policy, through
// the real binary (`contenteval serve`) on SQLite and on PostgreSQL, with the
// loader on the same machine. For each backend it reports the peak (closed
// loop, -c workers) and then the latency at half the peak rate (open loop,
// latencies measured from each request's scheduled start, so a stall is not
// hidden by the loader waiting for it). It finishes with pgbench's
// single-row INSERT rate as the database's own ceiling.
//
//	go run ./bench/cmd/jobsload -c 32 -d 10s [-pg postgres://...] [-out bench/results/jobs.md]
package main

// Flags, the run over backends, the setup of one backend's server and its
// phases, pgbench's ceiling and the Markdown report. The load phases
// themselves are in phases.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/contenteval/contenteval/bench"
	"github.com/contenteval/contenteval/persistence"
)

type options struct {
	workers  int
	duration time.Duration
	halfDur  time.Duration
	warmup   time.Duration
	pg       string
	out      string
	backends string
	bin      string
	rate     float64
	timeline bool
	step     time.Duration
	queue    int
	accounts int
	review   int  // review queues made before the load
	reviewIn bool // the first of them takes every job
}

func main() {
	var o options
	flag.IntVar(&o.workers, "c", 32, "closed-loop workers for the peak")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "measured duration of each phase")
	flag.DurationVar(&o.halfDur, "half-d", 0, "measured duration of the half-peak (open loop) phase; 0: the same as -d")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured warm-up before the peak phase")
	flag.StringVar(&o.pg, "pg", os.Getenv("CONTENTEVAL_TEST_DATABASE_URL"), "PostgreSQL URL (a schema is created and dropped); empty skips PostgreSQL")
	flag.StringVar(&o.out, "out", "", "also write the results as Markdown to this file")
	flag.StringVar(&o.backends, "backends", "sqlite,postgres", "backends to run")
	flag.StringVar(&o.bin, "bin", "", "contenteval binary to measure (default: build ./cmd/contenteval), for A/B runs against an older build")
	flag.Float64Var(&o.rate, "rate", 0, "skip the peak phase and run the open loop at this rate (req/s), to study the latency at one load")
	flag.BoolVar(&o.timeline, "timeline", false, "print the open loop's latency second by second (count, p99, max), to see whether the tail is spread or comes in stalls")
	flag.DurationVar(&o.step, "timeline-step", time.Second, "with -timeline: the width of each line (e.g. 100ms to find stalls)")
	flag.IntVar(&o.queue, "queue", 0, "instead of the synchronous load: queue this many asynchronous jobs on a server without workers, then time one worker process draining them (queue.go)")
	flag.IntVar(&o.accounts, "accounts", 4, "with -queue: how many accounts the jobs are spread over, round robin")
	flag.IntVar(&o.review, "review-queues", 0, "review queues to make before the load, routing labels the jobs do not match (the price of routing's check)")
	flag.BoolVar(&o.reviewIn, "review-match", false, "with -review-queues: the first queue takes every job (an item written per job)")
	loaderProcs := flag.Int("loader-procs", 1, "GOMAXPROCS of the loader itself (the server keeps the machine's)")
	flag.Parse()
	if o.halfDur <= 0 {
		o.halfDur = o.duration
	}
	runtime.GOMAXPROCS(*loaderProcs)
	// The loader's own collections take CPU from the server on this shared
	// machine; its heap is small, so collect less often.
	debug.SetGCPercent(400)
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "jobsload:", err)
		os.Exit(1)
	}
}

type result struct {
	backend                   string
	peakRPS                   float64
	peakP50, peakP99          time.Duration
	halfRate                  float64
	halfRPS                   float64
	halfP50, halfP99, halfMax time.Duration
	peakErrors, halfErrors    uint64
	firstError                string
	cpu                       cpuPerRequest // during the half-peak phase
	wal                       walPerRequest // during the half-peak phase (PostgreSQL)
	queue                     queueResult   // with -queue
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "jobsload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.bin
	if bin == "" {
		bin = filepath.Join(dir, "contenteval")
		build := exec.Command("go", "build", "-o", bin, "./cmd/contenteval")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	var results []result
	for _, b := range strings.Split(o.backends, ",") {
		var dbURL string
		switch b {
		case "sqlite":
			dbURL = "sqlite:" + filepath.Join(dir, "sqlite", "contenteval.db")
		case "postgres":
			if o.pg == "" {
				fmt.Println("postgres: skipped (no -pg URL)")
				continue
			}
			u, drop, err := bench.PrivateSchema(ctx, o.pg, "ce_bench")
			if err != nil {
				return err
			}
			defer drop()
			dbURL = u
		default:
			return fmt.Errorf("unknown backend %q", b)
		}
		var stats *persistence.DB
		if b == "postgres" {
			if stats, err = persistence.Open(ctx, o.pg); err != nil {
				return err
			}
			defer stats.Close()
		}
		r, err := runBackend(ctx, o, bin, filepath.Join(dir, b), b, dbURL, stats)
		if err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
		results = append(results, r)
	}
	if o.queue > 0 {
		report := queueMarkdown(o, results)
		fmt.Print(report)
		if o.out != "" {
			return os.WriteFile(o.out, []byte(report), 0o644)
		}
		return nil
	}
	pg := ""
	if o.pg != "" && strings.Contains(o.backends, "postgres") {
		pg, err = pgbenchInserts(o.pg, o.duration)
		if err != nil {
			pg = "pgbench failed: " + err.Error()
		}
	}
	report := markdown(o, results, pg)
	fmt.Print(report)
	if o.out != "" {
		return os.WriteFile(o.out, []byte(report), 0o644)
	}
	return nil
}

func runBackend(ctx context.Context, o options, bin, dataDir, backend, dbURL string, stats *persistence.DB) (result, error) {
	r := result{backend: backend}
	if _, err := exec.Command(bin, "migrate", "--data-dir="+dataDir, "--database-url="+dbURL).CombinedOutput(); err != nil {
		return r, fmt.Errorf("migrate: %w", err)
	}
	acct, err := bench.CLI(bin, dataDir, dbURL, "accounts", "create", "--name", "bench", "--type", "policy-first")
	if err != nil {
		return r, err
	}
	key, err := bench.CLI(bin, dataDir, dbURL, "keys", "create", "--account", acct["accountId"].(string))
	if err != nil {
		return r, err
	}
	token := key["token"].(string)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	addr := ln.Addr().String()
	ln.Close()
	role := "all"
	if o.queue > 0 {
		role = "api" // the queue fills first; drainQueue starts the workers
	}
	srv := exec.Command(bin, "serve", "--addr="+addr, "--data-dir="+dataDir, "--database-url="+dbURL,
		"--rate-rps=0", "--log-level=error", "--no-migrate=true", "--role="+role)
	srv.Stdout, srv.Stderr = io.Discard, os.Stderr
	// The loader is one client address with as many connections as the open
	// loop needs: the per-client connection cap (which an older build does
	// not have, and ignores) would reset the ones beyond it.
	srv.Env = append(os.Environ(), "CONTENTEVAL_MAX_CONNS_PER_CLIENT=0")
	if err := srv.Start(); err != nil {
		return r, err
	}
	defer func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() }()
	base := "http://" + addr
	if err := bench.WaitReady(base); err != nil {
		return r, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 1024}, Timeout: 60 * time.Second}
	hdr := http.Header{"Authorization": {"Bearer " + token}, "Content-Type": {"application/json"}}
	policyID, err := bench.CreatePolicy(client, base, token)
	if err != nil {
		return r, err
	}
	if err := createReviewQueues(client, base, token, policyID, o.review, o.reviewIn); err != nil {
		return r, err
	}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog, then buys a forbidden phrase 7 ", 14)[:1024]
	jb, _ := json.Marshal(map[string]any{
		"policyId": policyID, "waitForCompletion": true,
		"contentData": []map[string]string{{"text": text}},
	})
	// A check that the job really completes.
	status, body, err := do(client, base+"/v1/jobs", hdr, jb)
	if err != nil || status != http.StatusOK || !bytes.Contains(body, []byte("JOB_STATUS_COMPLETED")) {
		return r, fmt.Errorf("job: %d %s %v", status, body, err)
	}
	if o.queue > 0 {
		r.queue, err = drainQueue(o, bin, dataDir, dbURL, base, client, token, policyID, text)
		return r, err
	}

	// Peak: closed loop.
	load := newRawClient(addr, "/v1/jobs", hdr, jb, 1024)
	defer load.close()
	closed(load, o.workers, o.warmup)
	if o.rate > 0 {
		r.halfRate = o.rate
	} else {
		peak := closed(load, o.workers, o.duration)
		r.peakRPS = peak.rps
		r.peakP50, r.peakP99 = peak.h.Quantile(0.5), peak.h.Quantile(0.99)
		r.peakErrors, r.firstError = peak.errors, peak.firstErr
		// Half the peak: open loop.
		r.halfRate = r.peakRPS / 2
	}
	cpu0 := readCPU(srv.Process.Pid)
	m0 := serverBuckets(base)
	wal0 := readWAL(ctx, stats)
	half := open(load, r.halfRate, o.halfDur, o.step)
	r.cpu = readCPU(srv.Process.Pid).since(cpu0, half.h.Count())
	r.wal = readWAL(ctx, stats).since(wal0, half.h.Count())
	if o.timeline {
		fmt.Printf("%s server-side latency of the half-peak phase (contenteval_http_request_duration_seconds):\n", backend)
		for _, b := range serverBuckets(base).minus(m0) {
			fmt.Printf("  <= %s: %d\n", b.le, b.n)
		}
		fmt.Printf("%s loader lateness (scheduled start to send): p50 %s, p99 %s, max %s\n", backend,
			ms(half.late.Quantile(0.5)), ms(half.late.Quantile(0.99)), ms(half.late.Max()))
		for i, h := range half.seconds {
			fmt.Printf("%s at %7s: %4d requests, p99 %s, max %s\n", backend, time.Duration(i)*o.step, h.Count(), ms(h.Quantile(0.99)), ms(h.Max()))
		}
	}
	r.halfRPS = half.rps
	r.halfP50, r.halfP99, r.halfMax = half.h.Quantile(0.5), half.h.Quantile(0.99), half.h.Max()
	r.halfErrors = half.errors
	if r.firstError == "" {
		r.firstError = half.firstErr
	}
	return r, nil
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+)`)

// pgbenchInserts measures single-row INSERTs per second with pgbench on a
// scratch table (8 clients, 2 threads).
func pgbenchInserts(base string, d time.Duration) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Del("sslmode")
	u.RawQuery = ""
	conn := u.String()
	table := "ce_pgbench_rows"
	psql := func(sql string) error {
		out, err := exec.Command("psql", conn, "-v", "ON_ERROR_STOP=1", "-qc", sql).CombinedOutput()
		if err != nil {
			return fmt.Errorf("psql: %v: %s", err, out)
		}
		return nil
	}
	if err := psql("DROP TABLE IF EXISTS " + table + "; CREATE TABLE " + table + " (id BIGSERIAL PRIMARY KEY, v TEXT NOT NULL, created TIMESTAMPTZ NOT NULL DEFAULT now())"); err != nil {
		return "", err
	}
	defer func() { _ = psql("DROP TABLE IF EXISTS " + table) }()
	script := filepath.Join(os.TempDir(), "ce_pgbench_insert.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO "+table+" (v) VALUES ('x');\n"), 0o600); err != nil {
		return "", err
	}
	defer os.Remove(script)
	out, err := exec.Command("pgbench", "-n", "-c", "8", "-j", "2", "-T", fmt.Sprint(int(d.Seconds())), "-f", script, conn).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%v: %s", err, out)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("no tps in pgbench output: %s", out)
	}
	return string(m[1]), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func markdown(o options, rs []result, pg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## POST /v1/jobs, waitForCompletion, one 1 KiB text item, 20-label policy\n\n")
	fmt.Fprintf(&b, "`go run ./bench/cmd/jobsload -c %d -d %s -half-d %s` on %s, GOMAXPROCS %d, %s/%s; server = the `contenteval serve` binary, loader in the same machine.\n\n",
		o.workers, o.duration, o.halfDur, time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "| backend | peak req/s (closed loop, %d workers) | p50 | p99 | errors | half-peak rate (open loop) | achieved req/s | p50 | p99 | max | errors |\n", o.workers)
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %d | %.0f/s | %.0f | %s | %s | %s | %d |\n",
			r.backend, r.peakRPS, ms(r.peakP50), ms(r.peakP99), r.peakErrors, r.halfRate, r.halfRPS, ms(r.halfP50), ms(r.halfP99), ms(r.halfMax), r.halfErrors)
	}
	for _, r := range rs {
		if r.cpu.server > 0 {
			fmt.Fprintf(&b, "\n%s CPU per request at %.0f/s: server %s, PostgreSQL %s, loader %s; machine busy %.0f%%, stolen by the hypervisor %.0f%%.\n",
				r.backend, r.halfRate, ms(r.cpu.server), ms(r.cpu.postgres), ms(r.cpu.loader), 100*r.cpu.busy, 100*r.cpu.steal)
		}
		if r.wal.ok {
			fmt.Fprintf(&b, "\n%s database in the half-peak phase: %s.\n", r.backend, r.wal)
		}
	}
	for _, r := range rs {
		if r.firstError != "" {
			fmt.Fprintf(&b, "\n%s first error: %s\n", r.backend, r.firstError)
		}
	}
	if pg != "" {
		fmt.Fprintf(&b, "\npgbench single-row INSERT (8 clients, 2 threads, %s): %s tps — the database's own ceiling for one write per request.\n", o.duration, pg)
	}
	return b.String()
}
