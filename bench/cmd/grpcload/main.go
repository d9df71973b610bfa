// Command grpcload compares the two protocols: CreateJob over gRPC (the
// Clavata GatewayService) against POST /v1/jobs over REST, both waiting for
// completion, one 1 KiB text item, the 20-label policy of jobsload, on one
// `contenteval serve` binary (SQLite) and one port, with the loader on the
// same machine. Rounds alternate REST and gRPC, so drift on a shared
// machine hits both; the report gives each round and the medians. Target:
// gRPC's peak is at least 90% of REST's.
//
// With -vs moderation the second protocol is the OpenAI-compatible
// POST /v1/moderations with the same text against the same policy (its
// model is the policyKey), which records the same job; target: its peak is
// within 10% of POST /v1/jobs's.
//
//	go run ./bench/cmd/grpcload -c 32 -d 10s -rounds 3 [-vs moderation] [-out bench/results/grpc.md]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/bench"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"google.golang.org/protobuf/proto"
)

type options struct {
	workers  int
	duration time.Duration
	warmup   time.Duration
	rounds   int
	conns    int
	out      string
	// vs is the protocol compared with REST jobs: grpc or moderation.
	vs string
}

// name is the compared protocol's name in the report.
func (o options) name() string {
	if o.vs == "moderation" {
		return "moderation"
	}
	return "gRPC"
}

func main() {
	var o options
	flag.IntVar(&o.workers, "c", 32, "closed-loop workers, for each protocol")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "measured duration of each phase")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured warm-up of each protocol")
	flag.IntVar(&o.rounds, "rounds", 3, "REST then gRPC phases")
	flag.IntVar(&o.conns, "grpc-conns", 4, "gRPC connections the workers share (HTTP/2 multiplexes the calls)")
	flag.StringVar(&o.out, "out", "", "also write the results as Markdown to this file")
	flag.StringVar(&o.vs, "vs", "grpc", "compare POST /v1/jobs with: grpc (CreateJob) or moderation (POST /v1/moderations)")
	loaderProcs := flag.Int("loader-procs", 1, "GOMAXPROCS of the loader itself (the server keeps the machine's)")
	flag.Parse()
	runtime.GOMAXPROCS(*loaderProcs)
	debug.SetGCPercent(400)
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}

// loader is one protocol's client: call makes one CreateJob and says
// whether the job completed.
type loader interface {
	call() error
	close()
}

type phase struct {
	mu       sync.Mutex
	h        bench.Histogram
	errors   uint64
	firstErr string
	rps      float64
	// serverCPU is the server's CPU time per completed request.
	serverCPU time.Duration
}

// closed runs n workers calling l back to back for d.
func closed(l loader, n int, d time.Duration) *phase {
	p := &phase{}
	var done atomic.Uint64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			var h bench.Histogram
			var errs uint64
			first := ""
			for time.Now().Before(deadline) {
				start := time.Now()
				if err := l.call(); err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				h.Record(time.Since(start))
				done.Add(1)
			}
			p.mu.Lock()
			p.h.Merge(&h)
			p.errors += errs
			if p.firstErr == "" {
				p.firstErr = first
			}
			p.mu.Unlock()
		})
	}
	wg.Wait()
	p.rps = float64(done.Load()) / d.Seconds()
	return p
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "grpcload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "contenteval")
	build := exec.Command("go", "build", "-o", bin, "./cmd/contenteval")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	dataDir := filepath.Join(dir, "data")
	dbURL := "sqlite:" + filepath.Join(dataDir, "contenteval.db")
	if out, err := exec.Command(bin, "migrate", "--data-dir="+dataDir, "--database-url="+dbURL).CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %w: %s", err, out)
	}
	acct, err := bench.CLI(bin, dataDir, dbURL, "accounts", "create", "--name", "bench", "--type", "policy-first")
	if err != nil {
		return err
	}
	key, err := bench.CLI(bin, dataDir, dbURL, "keys", "create", "--account", acct["accountId"].(string))
	if err != nil {
		return err
	}
	token := key["token"].(string)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(bin, "serve", "--addr="+addr, "--data-dir="+dataDir, "--database-url="+dbURL,
		"--rate-rps=0", "--log-level=error", "--no-migrate=true")
	srv.Stdout, srv.Stderr = io.Discard, os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() }()
	base := "http://" + addr
	if err := bench.WaitReady(base); err != nil {
		return err
	}
	policyID, err := bench.CreatePolicy(http.DefaultClient, base, token)
	if err != nil {
		return err
	}

	text := strings.Repeat("the quick brown fox jumps over the lazy dog, then buys a forbidden phrase 7 ", 14)[:1024]
	restBody, _ := json.Marshal(map[string]any{"policyId": policyID, "waitForCompletion": true, "contentData": []map[string]string{{"text": text}}})
	rest := newRESTLoader(addr, token, "/v1/jobs", restBody, "JOB_STATUS_COMPLETED")
	defer rest.close()
	var g loader
	if o.vs == "moderation" {
		modBody, _ := json.Marshal(map[string]any{"model": "bench", "input": text})
		g = newRESTLoader(addr, token, "/v1/moderations", modBody, `"modr-`)
	} else {
		grpcReq, err := proto.Marshal(&pb.CreateJobRequest{PolicyId: policyID, WaitForCompletion: true,
			ContentData: []*pb.ContentData{{Content: &pb.ContentData_Text{Text: text}}}})
		if err != nil {
			return err
		}
		if g, err = newGRPCLoader(addr, token, grpcReq, o.conns); err != nil {
			return err
		}
	}
	defer g.close()
	// Each protocol once, checked: the job completes.
	if err := rest.call(); err != nil {
		return fmt.Errorf("REST: %w", err)
	}
	if err := g.call(); err != nil {
		return fmt.Errorf("%s: %w", o.name(), err)
	}

	closed(rest, o.workers, o.warmup)
	closed(g, o.workers, o.warmup)
	measured := func(l loader) *phase {
		cpu0 := bench.ProcessCPU(srv.Process.Pid)
		p := closed(l, o.workers, o.duration)
		if n := p.h.Count(); n > 0 {
			p.serverCPU = (bench.ProcessCPU(srv.Process.Pid) - cpu0) / time.Duration(n)
		}
		return p
	}
	var restRounds, grpcRounds []*phase
	for i := range o.rounds {
		r := measured(rest)
		gr := measured(g)
		fmt.Printf("round %d: REST %.0f req/s (p99 %s), %s %.0f req/s (p99 %s)\n", i+1, r.rps, ms(r.h.Quantile(0.99)), o.name(), gr.rps, ms(gr.h.Quantile(0.99)))
		restRounds, grpcRounds = append(restRounds, r), append(grpcRounds, gr)
	}
	report := markdown(o, restRounds, grpcRounds)
	fmt.Print(report)
	if o.out != "" {
		return os.WriteFile(o.out, []byte(report), 0o644)
	}
	return nil
}

func median(ps []*phase) *phase {
	s := slices.Clone(ps)
	slices.SortFunc(s, func(a, b *phase) int {
		switch {
		case a.rps < b.rps:
			return -1
		case a.rps > b.rps:
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func medianCPU(ps []*phase) time.Duration {
	cpus := make([]time.Duration, len(ps))
	for i, p := range ps {
		cpus[i] = p.serverCPU
	}
	slices.Sort(cpus)
	return cpus[len(cpus)/2]
}

func markdown(o options, rest, grpc []*phase) string {
	var b strings.Builder
	name, title, flags := o.name(), "CreateJob over gRPC vs POST /v1/jobs over REST", fmt.Sprintf("-grpc-conns %d", o.conns)
	if o.vs == "moderation" {
		title, flags = "POST /v1/moderations (OpenAI-compatible) vs POST /v1/jobs", "-vs moderation"
	}
	fmt.Fprintf(&b, "## %s: waitForCompletion, one 1 KiB text item, 20-label policy\n\n", title)
	fmt.Fprintf(&b, "`go run ./bench/cmd/grpcload -c %d -d %s -rounds %d %s` on %s, %d CPUs, %s/%s; server = the `contenteval serve` binary on SQLite, both on its one port, loader on the same machine (1 CPU of its own: GOMAXPROCS 1).\n\n",
		o.workers, o.duration, o.rounds, flags, time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "| round | REST req/s | p50 | p99 | server CPU/req | errors | %[1]s req/s | p50 | p99 | server CPU/req | errors | %[1]s / REST req/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n", name)
	row := func(name string, r, g *phase) {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %s | %d | %.0f | %s | %s | %s | %d | %.0f%% |\n", name,
			r.rps, ms(r.h.Quantile(0.5)), ms(r.h.Quantile(0.99)), ms(r.serverCPU), r.errors,
			g.rps, ms(g.h.Quantile(0.5)), ms(g.h.Quantile(0.99)), ms(g.serverCPU), g.errors, 100*g.rps/r.rps)
	}
	for i := range rest {
		row(fmt.Sprint(i+1), rest[i], grpc[i])
	}
	mr, mg := median(rest), median(grpc)
	row("median", mr, mg)
	verdict := "met"
	if mg.rps < 0.9*mr.rps {
		verdict = "NOT met"
	}
	fmt.Fprintf(&b, "\nTarget (%[1]s peak >= 90%% of REST's): %[2]s (%.0[3]f%% by the median rounds). Median server CPU per request: REST %[4]s, %[1]s %[5]s.\n",
		name, verdict, 100*mg.rps/mr.rps, ms(medianCPU(rest)), ms(medianCPU(grpc)))
	for _, p := range append(slices.Clone(rest), grpc...) {
		if p.firstErr != "" {
			fmt.Fprintf(&b, "\nfirst error: %s\n", p.firstErr)
			break
		}
	}
	return b.String()
}
