// Command history measures whether the history's size shows in the cost of
// requests whose cost must not grow with history: an empty database and one
// holding N jobs, side by side, the same requests on both, alternating
// between them; the ratio full/empty of the median latency is the figure.
//
//	go run ./bench/cmd/history [-pg URL] [-pg-jobs 1000000] [-sqlite-jobs 200000] [-days 35] [-alternations 3] [-n 20]
//
// Measured: GET /v1/jobs with the status filters and windows of the issue,
// a policy version's live metrics (the last day, and all time), a queue
// claim with 100,000 jobs queued (in process, through the store), and on
// PostgreSQL the p99 of synchronous jobs while the retention sweep drops a
// day of partitions, against without. Per request: p50 and p99 latency,
// server CPU and, on PostgreSQL, the CPU of the server's database backends.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

type options struct {
	pg                     string
	pgJobs, sqliteJobs     int
	days                   int
	alternations, n        int
	queued                 int
	bin                    string
	retentionLoadSeconds   int
	retentionDropDays      int
	skipSQLite, skipClaims bool
	keep                   bool
}

func main() {
	var o options
	flag.StringVar(&o.pg, "pg", os.Getenv("CONTENTEVAL_TEST_DATABASE_URL"), "PostgreSQL URL (private schemas are created and dropped); empty: SQLite only")
	flag.IntVar(&o.pgJobs, "pg-jobs", 1_000_000, "jobs in the full PostgreSQL database")
	flag.IntVar(&o.sqliteJobs, "sqlite-jobs", 200_000, "jobs in the full SQLite database")
	flag.IntVar(&o.days, "days", 35, "days the history spans")
	flag.IntVar(&o.alternations, "alternations", 3, "alternations of the empty and the full database; medians are over them")
	flag.IntVar(&o.n, "n", 20, "requests per request kind, database and alternation")
	flag.IntVar(&o.queued, "queued", 100_000, "jobs queued for the claim measurement")
	flag.StringVar(&o.bin, "bin", "", "contenteval binary (default: built from the working tree)")
	flag.IntVar(&o.retentionLoadSeconds, "retention-seconds", 20, "seconds of synchronous load with and without the drop (PostgreSQL)")
	flag.IntVar(&o.retentionDropDays, "retention-drop-days", 1, "days of partitions dropped under load (PostgreSQL)")
	flag.BoolVar(&o.skipSQLite, "skip-sqlite", false, "PostgreSQL only")
	flag.BoolVar(&o.skipClaims, "skip-claims", false, "leave out the queue claim")
	flag.BoolVar(&o.keep, "keep", false, "build the empty and the full PostgreSQL databases, print their URLs and ids and keep them (measured by the plans, see persistence's history explain test); no timing")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "history:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "history")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.bin == "" {
		o.bin = filepath.Join(dir, "contenteval")
		build := exec.Command("go", "build", "-o", o.bin, "./cmd/contenteval")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	fmt.Printf("history: %d days of history, %d alternations x %d requests, GOMAXPROCS %d, %s/%s\n",
		o.days, o.alternations, o.n, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	printLoad("at start")
	backends := []string{"sqlite", "postgres"}
	if o.skipSQLite {
		backends = backends[1:]
	}
	for _, backend := range backends {
		jobs := o.sqliteJobs
		if backend == "postgres" {
			if o.pg == "" {
				continue
			}
			jobs = o.pgJobs
		}
		if err := runBackend(ctx, o, dir, backend, jobs); err != nil {
			return fmt.Errorf("%s: %w", backend, err)
		}
	}
	printLoad("at the end")
	return nil
}

// runBackend builds an empty and a full database of backend, measures
// every request on both and prints the table.
func runBackend(ctx context.Context, o options, dir, backend string, jobs int) error {
	empty, err := newEnv(ctx, o, filepath.Join(dir, backend+"-empty"), backend, "ce_hist_empty")
	if err != nil {
		return err
	}
	defer empty.close()
	full, err := newEnv(ctx, o, filepath.Join(dir, backend+"-full"), backend, "ce_hist_full")
	if err != nil {
		return err
	}
	defer full.close()
	start := time.Now()
	if err := populate(ctx, full.db, full.history(jobs, o.days)); err != nil {
		return fmt.Errorf("populate: %w", err)
	}
	fmt.Printf("\n## %s: %d jobs written in %.0f s\n", backend, jobs, time.Since(start).Seconds())
	start = time.Now()
	if err := recount(ctx, full.db); err != nil {
		return fmt.Errorf("recount: %w", err)
	}
	fmt.Printf("metric counts of the history (migrations 00111 and 00140's backfills) in %.1f s\n", time.Since(start).Seconds())
	for _, e := range []*env{empty, full} {
		if err := e.analyze(ctx); err != nil {
			return err
		}
	}
	if o.keep {
		for _, e := range []*env{empty, full} {
			e.drop = func() {}
			fmt.Printf("%s: url %s account %s policy version %s\n", map[*env]string{empty: "empty", full: "full"}[e], e.dbURL, e.accountID, e.versionID)
		}
		return nil
	}
	if err := measureRequests(o, empty, full); err != nil {
		return err
	}
	if !o.skipClaims {
		if err := measureClaims(ctx, o, empty, full); err != nil {
			return fmt.Errorf("claims: %w", err)
		}
	}
	if backend == "postgres" {
		if err := measureRetention(ctx, o, full); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
	}
	return nil
}

func printLoad(when string) {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average %s: %s", when, b)
	}
}
