// Command jobbytes measures what one synchronous job stores: N jobs of one
// 1 KiB text item against the load tests' 20-label policy (bench.PolicyText),
// POSTed with waitForCompletion to the real binary (`contenteval serve`), on
// PostgreSQL and SQLite, each from an empty database. It reports bytes per
// job by table (heap, indexes, TOAST; SQLite's b-trees), the WAL PostgreSQL
// wrote for them, and, for M asynchronous jobs run by the server's workers,
// the share of the jobs table's updates that were HOT.
//
//	go run ./bench/cmd/jobbytes [-n 2000] [-async 500] [-pg URL] [-backends postgres,sqlite] [-bin path]
package main

import (
	"context"
	"flag"
	"fmt"
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
	n, async, clients int
	pg, backends, bin string
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 2000, "synchronous jobs measured")
	flag.IntVar(&o.async, "async", 500, "asynchronous jobs for the HOT share (PostgreSQL); 0 skips them")
	flag.IntVar(&o.clients, "c", 4, "concurrent clients")
	flag.StringVar(&o.pg, "pg", os.Getenv("CONTENTEVAL_TEST_DATABASE_URL"), "PostgreSQL URL (a private schema is created and dropped); empty skips PostgreSQL")
	flag.StringVar(&o.backends, "backends", "postgres,sqlite", "backends to measure")
	flag.StringVar(&o.bin, "bin", "", "contenteval binary (default: built from the working tree), for A/B runs against an older build")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "jobbytes:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "jobbytes")
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
	fmt.Printf("# jobbytes: %d synchronous 1 KiB, 20-label jobs, %s, %s/%s\n\n", o.n,
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH)
	for _, b := range strings.Split(o.backends, ",") {
		switch b {
		case "postgres":
			if o.pg == "" {
				fmt.Println("postgres: skipped (no -pg URL)")
				continue
			}
			if err := runPostgres(ctx, o, bin, filepath.Join(dir, b)); err != nil {
				return fmt.Errorf("postgres: %w", err)
			}
		case "sqlite":
			if err := runSQLite(ctx, o, bin, filepath.Join(dir, b)); err != nil {
				return fmt.Errorf("sqlite: %w", err)
			}
		default:
			return fmt.Errorf("unknown backend %q", b)
		}
	}
	return nil
}

// server is one `contenteval serve` with a policy-first account, its key
// and the 20-label policy.
type server struct {
	bin, dataDir, dbURL string
	cmd                 *exec.Cmd
	base, token, policy string
	client              *http.Client
}

// setup migrates dbURL, creates the account and key, and starts the server.
func setup(bin, dataDir, dbURL string) (*server, error) {
	s := &server{bin: bin, dataDir: dataDir, dbURL: dbURL, client: &http.Client{Timeout: 60 * time.Second}}
	if out, err := exec.Command(bin, "migrate", "--data-dir="+dataDir, "--database-url="+dbURL).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("migrate: %w: %s", err, out)
	}
	acct, err := bench.CLI(bin, dataDir, dbURL, "accounts", "create", "--name", "bench", "--type", "policy-first")
	if err != nil {
		return nil, err
	}
	key, err := bench.CLI(bin, dataDir, dbURL, "keys", "create", "--account", acct["accountId"].(string))
	if err != nil {
		return nil, err
	}
	s.token = key["token"].(string)
	if err := s.start(); err != nil {
		return nil, err
	}
	if s.policy, err = bench.CreatePolicy(s.client, s.base, s.token); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) start() error {
	cmd, base, err := bench.ServeBinary(s.bin, s.dataDir, s.dbURL)
	if err != nil {
		return err
	}
	s.cmd, s.base = cmd, base
	return nil
}

// stop ends the server; its exit flushes its database statistics.
func (s *server) stop() {
	bench.StopBinary(s.cmd)
	s.cmd = nil
}
