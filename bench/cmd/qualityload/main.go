// Command qualityload is the benchmark of policy quality (dataset runs, shadow versions), through
// the real binary (`contenteval serve`, default settings) with the loader on
// the same machine:
//
//   - dataset: a 10,000-example text dataset and a 20-rule label version,
//     run again and again (POST .../dataset-runs until COMPLETED), in
//     examples per second; target >= 2,000/s on SQLite with the built-in
//     evaluators.
//
//   - shadow: synchronous POST /v1/jobs (waitForCompletion, one 1 KiB text
//     item, the 20-label policy) at a fixed rate (open loop), alternating
//     rounds against a policy without a shadow version and an identical
//     one whose shadow version (sample rate 1) evaluates every job; target:
//     latency with the shadow within 5% of without, in the same run.
//
//     go run ./bench/cmd/qualityload [-backends sqlite,postgres] [-examples 10000] [-runs 3]
//     [-rate 100] [-d 10s] [-rounds 6] [-out bench/results/quality-run.md]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/contenteval/contenteval/bench"
)

type options struct {
	backends string
	pg       string
	bin      string
	examples int
	runs     int
	rate     float64
	duration time.Duration
	rounds   int
	out      string
	skip     string
}

func main() {
	var o options
	flag.StringVar(&o.backends, "backends", "sqlite", "backends to run (sqlite,postgres)")
	flag.StringVar(&o.pg, "pg", os.Getenv("CONTENTEVAL_TEST_DATABASE_URL"), "PostgreSQL URL (a schema is created and dropped)")
	flag.StringVar(&o.bin, "bin", "", "contenteval binary to measure (default: build ./cmd/contenteval)")
	flag.IntVar(&o.examples, "examples", 10000, "examples in the dataset (at most 10,000 per label)")
	flag.IntVar(&o.runs, "runs", 3, "dataset runs, one after the other")
	flag.Float64Var(&o.rate, "rate", 100, "synchronous jobs per second in the shadow rounds (open loop)")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "measured duration of each shadow round")
	flag.IntVar(&o.rounds, "rounds", 6, "shadow rounds, alternating without and with the shadow (even)")
	flag.StringVar(&o.out, "out", "", "also write the results as Markdown to this file")
	flag.StringVar(&o.skip, "skip", "", "skip a part: dataset or shadow")
	flag.Parse()
	if o.examples < 1 || o.examples > 10000 || o.runs < 1 || o.rounds < 2 || o.rounds%2 != 0 || o.rate <= 0 || o.rate > 2000 || o.duration <= 0 || o.duration > 10*time.Minute {
		fmt.Fprintln(os.Stderr, "qualityload: want 1..10000 examples, runs >= 1, an even number of rounds >= 2, 0 < rate <= 2000, 0 < d <= 10m")
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "qualityload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "qualityload")
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
	var report strings.Builder
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&report, "`go run ./bench/cmd/qualityload %s` on %s, %s/%s, %d CPUs; load average at start: %s\n",
		strings.Join(os.Args[1:], " "), time.Now().UTC().Format("2006-01-02 15:04 MST"),
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), strings.TrimSpace(string(load)))
	for _, b := range strings.Split(o.backends, ",") {
		dbURL := "sqlite:" + filepath.Join(dir, b, "contenteval.db")
		if b == "postgres" {
			if o.pg == "" {
				fmt.Println("postgres: skipped (no -pg URL)")
				continue
			}
			u, drop, err := bench.PrivateSchema(ctx, o.pg, "ce_qbench")
			if err != nil {
				return err
			}
			defer drop()
			dbURL = u
		} else if b != "sqlite" {
			return fmt.Errorf("unknown backend %q", b)
		}
		s, err := startServer(bin, filepath.Join(dir, b), dbURL)
		if err != nil {
			return fmt.Errorf("%s: %w", b, err)
		}
		fmt.Fprintf(&report, "\n### %s\n", b)
		if o.skip != "dataset" {
			if err := datasetRuns(s, o, &report); err != nil {
				s.stop()
				return fmt.Errorf("%s dataset: %w", b, err)
			}
		}
		if o.skip != "shadow" {
			if err := shadowRounds(s, o, &report); err != nil {
				s.stop()
				return fmt.Errorf("%s shadow: %w", b, err)
			}
		}
		s.stop()
	}
	fmt.Print(report.String())
	if o.out != "" {
		return os.WriteFile(o.out, []byte(report.String()), 0o644)
	}
	return nil
}

// server is a running `contenteval serve` with a label-first and a
// policy-first account.
type server struct {
	cmd                *exec.Cmd
	base               string
	client             *http.Client
	labelTok, policyTk string
}

func startServer(bin, dataDir, dbURL string) (*server, error) {
	if out, err := exec.Command(bin, "migrate", "--data-dir="+dataDir, "--database-url="+dbURL).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("migrate: %v: %s", err, out)
	}
	token := func(typ string) (string, error) {
		a, err := bench.CLI(bin, dataDir, dbURL, "accounts", "create", "--name", typ, "--type", typ)
		if err != nil {
			return "", err
		}
		k, err := bench.CLI(bin, dataDir, dbURL, "keys", "create", "--account", a["accountId"].(string))
		if err != nil {
			return "", err
		}
		return k["token"].(string), nil
	}
	s := &server{client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxConnsPerHost: 512}, Timeout: time.Minute}}
	var err error
	if s.labelTok, err = token("label-first"); err != nil {
		return nil, err
	}
	if s.policyTk, err = token("policy-first"); err != nil {
		return nil, err
	}
	if s.cmd, s.base, err = bench.ServeBinary(bin, dataDir, dbURL); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *server) stop() { bench.StopBinary(s.cmd) }

// call sends a JSON request and decodes a 200 answer into out (when not nil).
func (s *server) call(method, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, answer)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(answer, out)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
