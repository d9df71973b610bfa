// Command labelhits measures GET /v1/jobs/{jobUuid}/labels: the
// latency of one 1,000-hit page from a job holding 100,000 hits, through the
// whole HTTP stack (auth, validation, strict handler, JSON), on SQLite and,
// with -postgres, on PostgreSQL. Target: p99 under 25 ms.
//
//	go run ./bench/cmd/labelhits [-n 1000] [-hits 100000] [-postgres URL]
//
// With -postgres the tool creates a private schema, migrates it and drops it
// at the end; the URL's role needs CREATE on the database.
package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/handlers"
	"github.com/contenteval/contenteval/persistence"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

func main() {
	n := flag.Int("n", 1000, "measured requests per backend and case")
	total := flag.Int("hits", 100000, "hits in the job")
	perResult := flag.Int("per-result", 1000, "hits per job result")
	pg := flag.String("postgres", os.Getenv("CONTENTEVAL_TEST_DATABASE_URL"), "PostgreSQL URL (empty: SQLite only)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured requests to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "labelhits:", err)
			os.Exit(1)
		}
		profile = f
	}
	fmt.Printf("labelhits: %d hits (%d per result), %d requests per case, GOMAXPROCS %d, %s/%s\n\n",
		*total, *perResult, *n, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	fmt.Println("| backend | case | requests | p50 ms | p99 ms | max ms | CPU ms/request | bytes/page |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	ok := true
	for _, b := range backends(*pg) {
		if err := run(b, *n, *total, *perResult, &ok); err != nil {
			fmt.Fprintf(os.Stderr, "labelhits: %s: %v\n", b, err)
			os.Exit(1)
		}
	}
	if !ok {
		fmt.Println("\nFAIL: a p99 is 25 ms or more")
		os.Exit(1)
	}
	fmt.Println("\nOK: every p99 is under 25 ms")
}

func backends(pg string) []string {
	if pg == "" {
		return []string{"sqlite"}
	}
	return []string{"sqlite", pg}
}

func run(backend string, n, total, perResult int, ok *bool) error {
	ctx := context.Background()
	db, name, cleanup, err := open(ctx, backend)
	if err != nil {
		return err
	}
	defer cleanup()
	if err := db.Migrate(ctx); err != nil {
		return err
	}
	token, jobID, resultIDs, e, err := setup(ctx, db, total, perResult)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := handlers.HTTPServer(ln.Addr().String(), e)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/v1/jobs/" + jobID + "/labels"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

	// get sends one request and reads the whole body; the time it takes is
	// the latency (the client's JSON decoding is not part of it).
	get := func(u string, decode bool) (int, string, time.Duration, error) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", 0, err
		}
		body, err := io.ReadAll(resp.Body)
		took := time.Since(t0)
		resp.Body.Close()
		if err != nil {
			return 0, "", 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, "", 0, fmt.Errorf("GET %s: %d %s", u, resp.StatusCode, body)
		}
		if !decode {
			return len(body), "", took, nil
		}
		var page struct {
			Labels        []json.RawMessage `json:"labels"`
			NextPageToken string            `json:"nextPageToken"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return 0, "", 0, err
		}
		if len(page.Labels) != 1000 && page.NextPageToken != "" {
			return 0, "", 0, fmt.Errorf("GET %s: a short page with a next page token", u)
		}
		if len(page.Labels) == 0 {
			return 0, "", 0, fmt.Errorf("GET %s: empty page", u)
		}
		return len(body), page.NextPageToken, took, nil
	}

	// Walk the job once to collect the token of every page, so the
	// measurement reads pages from all depths of the job.
	pages := []string{base}
	for tok := ""; ; {
		u := base
		if tok != "" {
			u += "?pageToken=" + url.QueryEscape(tok)
			pages = append(pages, u)
		}
		_, next, _, err := get(u, true)
		if err != nil {
			return err
		}
		if next == "" {
			break
		}
		tok = next
	}
	if want := (total + 999) / 1000; len(pages) != want {
		return fmt.Errorf("walked %d pages, want %d", len(pages), want)
	}
	cases := []struct {
		name string
		urls []string
	}{
		{"1,000-hit pages at every depth", pages},
		{"first page, jobResultId filter (last result)", []string{base + "?jobResultId=" + resultIDs[len(resultIDs)-1]}},
	}
	for _, c := range cases {
		for i := 0; i < 50; i++ { // warm-up
			if _, _, _, err := get(c.urls[i%len(c.urls)], true); err != nil {
				return err
			}
		}
		if profile != nil {
			_ = pprof.StartCPUProfile(profile)
		}
		lat := make([]time.Duration, n)
		size := 0
		cpu0 := cpuTime()
		for i := range n {
			b, _, took, err := get(c.urls[i%len(c.urls)], false)
			lat[i] = took
			if err != nil {
				return err
			}
			size = b
		}
		cpu := (cpuTime() - cpu0) / time.Duration(n)
		if profile != nil {
			pprof.StopCPUProfile()
			profile = nil
		}
		slices.Sort(lat)
		p := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
		if p(0.99) >= 25*time.Millisecond {
			*ok = false
		}
		fmt.Printf("| %s | %s | %d | %.2f | %.2f | %.2f | %.2f | %d |\n", name, c.name, n,
			ms(p(0.50)), ms(p(0.99)), ms(lat[len(lat)-1]), ms(cpu), size)
	}
	return nil
}

// profile receives the CPU profile of the measured requests when set.
var profile *os.File

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// open returns a fresh database: a temporary SQLite file, or a private
// PostgreSQL schema dropped by cleanup.
func open(ctx context.Context, backend string) (*persistence.DB, string, func(), error) {
	if backend == "sqlite" {
		dir, err := os.MkdirTemp("", "labelhits-*")
		if err != nil {
			return nil, "", nil, err
		}
		db, err := persistence.Open(ctx, "sqlite:"+filepath.Join(dir, "bench.db"))
		if err != nil {
			return nil, "", nil, err
		}
		return db, "sqlite", func() { db.Close(); os.RemoveAll(dir) }, nil
	}
	u, err := url.Parse(backend)
	if err != nil {
		return nil, "", nil, fmt.Errorf("bad PostgreSQL URL")
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bench_labelhits_" + hex.EncodeToString(b)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := persistence.Open(ctx, u.String())
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		return nil, "", nil, err
	}
	cleanup := func() {
		_, _ = db.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		db.Close()
	}
	return db, "postgres", cleanup, nil
}

// setup creates a label-first account with a key and a completed job holding
// total hits, perResult per result, and returns the wired HTTP handler.
func setup(ctx context.Context, db *persistence.DB, total, perResult int) (token, jobID string, resultIDs []string, e *echo.Echo, err error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", nil, nil, err
	}
	clock := domain.SystemClock{}
	accounts := persistence.NewAccounts(db)
	keys := access.NewKeyService(persistence.NewKeys(db), accounts, priv, clock, 5*time.Second)
	now := clock.Now()
	a := &domain.Account{ID: uuid.NewString(), Name: "bench", Type: domain.AccountLabelFirst, Created: now, Updated: now}
	if err := accounts.CreateAccount(ctx, a); err != nil {
		return "", "", nil, nil, err
	}
	if _, token, err = keys.Issue(ctx, a.ID, "bench", 0); err != nil {
		return "", "", nil, nil, err
	}
	jobs := persistence.NewJobs(db)
	until := now.Add(time.Hour)
	j := &domain.Job{
		ID: uuid.NewString(), AccountID: a.ID, Type: domain.JobTypeStandard, Status: domain.JobRunning, Threshold: 0.5,
		LeaseOwner: "bench", LeaseExpiresAt: &until, Attempts: 1, Created: now, Updated: now, Started: &now,
	}
	nResults := (total + perResult - 1) / perResult
	for range nResults {
		j.Contents = append(j.Contents, domain.ContentSummary{ContentHash: "sha256::00"})
	}
	if err := jobs.CreateJob(ctx, j); err != nil {
		return "", "", nil, nil, err
	}
	var results []*domain.JobResult
	var hits []*domain.LabelHit
	for i := range nResults {
		r := &domain.JobResult{ID: uuid.NewString(), JobID: j.ID, Index: i, ContentHash: "sha256::00", Created: now}
		results = append(results, r)
		resultIDs = append(resultIDs, r.ID)
		for k := 0; k < perResult && len(hits) < total; k++ {
			start := int64(k) * 2000
			end, fs, fe, ts, te := start+1500, start, start+2000, start+100, start+1500
			hits = append(hits, &domain.LabelHit{
				JobID: j.ID, JobResultID: r.ID, Seq: len(hits), Label: fmt.Sprintf("label-%d", k%20),
				Modality: domain.ModalityVideo, Score: 0.87, StartMs: start, EndMs: &end,
				FrameStartMs: &fs, FrameEndMs: &fe, TranscriptStartMs: &ts, TranscriptEndMs: &te,
			})
		}
	}
	if err := jobs.FinishJob(ctx, j.ID, "bench", domain.JobCompleted, now, nil, results, hits); err != nil {
		return "", "", nil, nil, err
	}
	eval := labels.NewEvaluationService(persistence.NewLabels(db), persistence.NewLabelVersions(db), jobs,
		persistence.NewFeedback(db), clock, paging.NewTokens(keys.DeriveSecret("contenteval/page-tokens/label-evaluation")),
		labels.EvaluationConfig{HitRanges: persistence.NewLabelHits(db)})
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h, err := handlers.New(handlers.Config{BodyLimit: 32 << 20}, handlers.Deps{
		Log: log, Keys: keys, Limiter: access.NewRateLimiter(domain.Limits{}, clock), LabelEvaluation: eval, Ready: db.Ping,
	})
	if err != nil {
		return "", "", nil, nil, err
	}
	return token, j.ID, resultIDs, h, nil
}
