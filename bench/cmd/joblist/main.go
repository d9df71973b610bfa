// Command joblist measures the cost of results in listings: GET /v1/jobs
// with pageSize=1000 over 1,000 completed jobs, now that completed jobs carry
// their results, against a baseline build that listed basic fields only. Both
// builds serve the same database at once (role api, so nothing else runs),
// and the rounds alternate between them, so the ratio new/baseline is taken
// on the same machine at the same moment.
//
//	go run ./bench/cmd/joblist -base REV [-n 10] [-rounds 5] [-pg postgres://...]
//
// -base is a git revision of this repository (built from `git archive`), or
// -base-bin a contenteval binary; or, with -base-query alone, the baseline is
// the working tree's build asked with that query added (view=JOB_VIEW_BASIC:
// the page without results against the one with). Each job is one ~1 KiB text item against the
// load tests' 20-label policy (bench.PolicyText), so its report has 20
// sections with their assertions.
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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contenteval/contenteval/bench"
)

type options struct {
	base, baseBin string
	baseQuery     string
	jobs, n       int
	rounds        int
	pg            string
}

func main() {
	var o options
	flag.StringVar(&o.base, "base", "", "git revision of the baseline build (built from git archive)")
	flag.StringVar(&o.baseBin, "base-bin", "", "baseline contenteval binary (instead of -base)")
	flag.StringVar(&o.baseQuery, "base-query", "", "query parameters the baseline's requests add (alone: the baseline is the new build)")
	flag.IntVar(&o.jobs, "jobs", 1000, "completed jobs in the account (the page size is 1000)")
	flag.IntVar(&o.n, "n", 10, "requests per build and round")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each measures both builds, in alternating order")
	flag.StringVar(&o.pg, "pg", os.Getenv("CONTENTEVAL_TEST_DATABASE_URL"), "PostgreSQL URL (a schema is created and dropped); empty: SQLite only")
	flag.Parse()
	if o.base != "" && o.baseBin != "" || o.base == "" && o.baseBin == "" && o.baseQuery == "" {
		fmt.Fprintln(os.Stderr, "joblist: give one of -base REV, -base-bin PATH and -base-query QUERY")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "joblist:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "joblist")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	newBin := filepath.Join(dir, "contenteval-new")
	if err := goBuild(".", newBin); err != nil {
		return err
	}
	baseBin := o.baseBin
	if baseBin == "" && o.base == "" {
		baseBin = newBin
	} else if baseBin == "" {
		if baseBin, err = buildRevision(dir, o.base); err != nil {
			return err
		}
	}
	fmt.Printf("joblist: GET /v1/jobs?pageSize=1000 over %d completed jobs, %d requests x %d rounds per build, GOMAXPROCS %d, %s/%s\n",
		o.jobs, o.n, o.rounds, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average at start: %s", b)
	}
	fmt.Println()
	fmt.Println("| backend | build | p50 ms | p90 ms | server CPU ms/request | bytes/page | jobs with results |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var ratios []string
	for _, backend := range []string{"sqlite", "postgres"} {
		dbURL := "sqlite:" + filepath.Join(dir, backend, "contenteval.db")
		if backend == "postgres" {
			if o.pg == "" {
				continue
			}
			u, drop, err := bench.PrivateSchema(context.Background(), o.pg, "ce_joblist")
			if err != nil {
				return err
			}
			defer drop()
			dbURL = u
		}
		r, err := runBackend(o, filepath.Join(dir, backend), dbURL, baseBin, newBin)
		if err != nil {
			return fmt.Errorf("%s: %w", backend, err)
		}
		for _, b := range []*buildResult{&r.base, &r.new} {
			fmt.Printf("| %s | %s | %.1f | %.1f | %.1f | %d | %d |\n", backend, b.name,
				ms(quantile(b.latencies, 0.5)), ms(quantile(b.latencies, 0.9)), ms(median(b.cpuPerRound)), b.bytes, b.withResults)
		}
		ratios = append(ratios, fmt.Sprintf("%s: latency new/baseline %.2f (per-round medians %s), server CPU %.2f",
			backend, median(r.latencyRatios), format(r.latencyRatios), median(r.cpuRatios)))
	}
	fmt.Println()
	for _, l := range ratios {
		fmt.Println(l)
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average at the end: %s", b)
	}
	return nil
}

func goBuild(dir, out string) error {
	cmd := exec.Command("go", "build", "-o", out, "./cmd/contenteval")
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build in %s: %w", dir, err)
	}
	return nil
}

// buildRevision builds cmd/contenteval of a revision of this repository.
func buildRevision(dir, rev string) (string, error) {
	src := filepath.Join(dir, "base-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "archive", "--format=tar", rev)
	archive.Stderr = os.Stderr
	tar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	tar.Stdin, tar.Stderr = pipe, os.Stderr
	if err := tar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", rev, err)
	}
	if err := tar.Wait(); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "contenteval-base")
	return bin, goBuild(src, bin)
}

type buildResult struct {
	name        string
	latencies   []time.Duration
	cpuPerRound []time.Duration
	bytes       int
	withResults int
}

type backendResult struct {
	base, new                buildResult
	latencyRatios, cpuRatios []float64
}

func runBackend(o options, dataDir, dbURL, baseBin, newBin string) (backendResult, error) {
	r := backendResult{base: buildResult{name: "baseline"}, new: buildResult{name: "new"}}
	if out, err := exec.Command(newBin, "migrate", "--data-dir="+dataDir, "--database-url="+dbURL).CombinedOutput(); err != nil {
		return r, fmt.Errorf("migrate: %w: %s", err, out)
	}
	acct, err := bench.CLI(newBin, dataDir, dbURL, "accounts", "create", "--name", "bench", "--type", "policy-first")
	if err != nil {
		return r, err
	}
	key, err := bench.CLI(newBin, dataDir, dbURL, "keys", "create", "--account", acct["accountId"].(string))
	if err != nil {
		return r, err
	}
	token := key["token"].(string)
	client := &http.Client{Timeout: 2 * time.Minute}

	// Seed with the new build serving every role (it runs the jobs).
	seeder, err := serve(newBin, dataDir, dbURL, "all")
	if err != nil {
		return r, err
	}
	err = seed(client, seeder.base, token, o.jobs)
	seeder.stop()
	if err != nil {
		return r, err
	}

	base, err := serve(baseBin, dataDir, dbURL, "api")
	if err != nil {
		return r, err
	}
	defer base.stop()
	next, err := serve(newBin, dataDir, dbURL, "api")
	if err != nil {
		return r, err
	}
	defer next.stop()

	servers := []*server{base, next}
	queries := []string{o.baseQuery, ""}
	results := []*buildResult{&r.base, &r.new}
	for i, s := range servers {
		for range 3 { // warm-up, and what a page holds
			body, _, err := listPage(client, s.base, queries[i], token)
			if err != nil {
				return r, err
			}
			n, err := jobsWithResults(body)
			if err != nil {
				return r, err
			}
			results[i].bytes, results[i].withResults = len(body), n
		}
	}
	if r.base.withResults != 0 || r.new.withResults != o.jobs {
		return r, fmt.Errorf("the builds are not the ones compared: baseline lists %d jobs with results, new %d (want 0 and %d)",
			r.base.withResults, r.new.withResults, o.jobs)
	}
	for round := range o.rounds {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		var mean [2]time.Duration
		var cpu [2]time.Duration
		for _, i := range order {
			s := servers[i]
			cpu0 := bench.ProcessCPU(s.cmd.Process.Pid)
			var sum time.Duration
			for range o.n {
				_, took, err := listPage(client, s.base, queries[i], token)
				if err != nil {
					return r, err
				}
				results[i].latencies = append(results[i].latencies, took)
				sum += took
			}
			cpu[i] = (bench.ProcessCPU(s.cmd.Process.Pid) - cpu0) / time.Duration(o.n)
			mean[i] = sum / time.Duration(o.n)
			results[i].cpuPerRound = append(results[i].cpuPerRound, cpu[i])
		}
		r.latencyRatios = append(r.latencyRatios, float64(mean[1])/float64(mean[0]))
		if cpu[0] > 0 {
			r.cpuRatios = append(r.cpuRatios, float64(cpu[1])/float64(cpu[0]))
		}
	}
	return r, nil
}

// seed creates the policy and o.jobs completed one-item jobs, eight at a
// time.
func seed(client *http.Client, base, token string, jobs int) error {
	policyID, err := bench.CreatePolicy(client, base, token)
	if err != nil {
		return err
	}
	text := strings.Repeat("the quick brown fox jumps over the lazy dog, then buys a forbidden phrase 7 ", 14)[:1024]
	body, _ := json.Marshal(map[string]any{"policyId": policyID, "waitForCompletion": true, "contentData": []map[string]string{{"text": text}}})
	work := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				req, _ := http.NewRequest(http.MethodPost, base+"/v1/jobs", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				answer, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte("JOB_STATUS_COMPLETED")) {
					errs <- fmt.Errorf("seeding: %d %.300s", resp.StatusCode, answer)
					return
				}
			}
		}()
	}
	var sendErr error
	for range jobs {
		select {
		case work <- struct{}{}:
		case sendErr = <-errs:
		}
		if sendErr != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if sendErr != nil {
		return sendErr
	}
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func listPage(client *http.Client, base, query, token string) ([]byte, time.Duration, error) {
	url := base + "/v1/jobs?pageSize=1000"
	if query != "" {
		url += "&" + query
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	took := time.Since(t0)
	resp.Body.Close()
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET /v1/jobs: %d %.300s", resp.StatusCode, body)
	}
	return body, took, nil
}

func jobsWithResults(body []byte) (int, error) {
	var page struct {
		Jobs []struct {
			Results []json.RawMessage `json:"results"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return 0, err
	}
	n := 0
	for _, j := range page.Jobs {
		if len(j.Results) > 0 {
			n++
		}
	}
	return n, nil
}

type server struct {
	cmd  *exec.Cmd
	base string
}

func serve(bin, dataDir, dbURL, role string) (*server, error) {
	cmd, base, err := bench.ServeBinary(bin, dataDir, dbURL, "--role="+role)
	if err != nil {
		return nil, err
	}
	return &server{cmd: cmd, base: base}, nil
}

func (s *server) stop() { bench.StopBinary(s.cmd) }

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

func median[T time.Duration | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func format(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
