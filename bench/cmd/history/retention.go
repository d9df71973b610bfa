package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/contenteval/contenteval/bench"
	"github.com/contenteval/contenteval/persistence"
)

// syncClients is the concurrency of the synchronous load.
const syncClients = 4

// measureRetention runs synchronous jobs (POST /v1/jobs waiting for
// completion) against a server with workers on the full PostgreSQL
// database, once as they are and once while the oldest days' partitions
// are dropped as the retention sweep drops them, and prints the p50 and
// p99 of both.
func measureRetention(ctx context.Context, o options, full *env) error {
	cmd, base, err := bench.ServeBinary(o.bin, full.dataDir, withQuery(full.dbURL, "application_name", full.appName+"_all"), "--role=all")
	if err != nil {
		return err
	}
	defer bench.StopBinary(cmd)
	body, _ := json.Marshal(map[string]any{"policyId": full.policyID, "waitForCompletion": true,
		"contentData": []map[string]string{{"text": "a short text with a forbidden phrase 3 in it"}}})
	load := time.Duration(o.retentionLoadSeconds) * time.Second
	without, err := syncLoad(base, full.token, body, load, nil)
	if err != nil {
		return err
	}
	store := persistence.NewRetention(full.db)
	oldest, err := store.OldestPartitionDay(ctx)
	if err != nil || oldest == nil {
		return fmt.Errorf("no day partition to drop: %v", err)
	}
	before, err := historySize(ctx, full.db)
	if err != nil {
		return err
	}
	var dropped struct {
		took                 time.Duration
		partitions, attempts int
		err                  error
	}
	// As the sweep does, but again and again until it has dropped the day:
	// a drop that cannot take its lock in time gives up and is tried at
	// the next sweep.
	with, err := syncLoad(base, full.token, body, load, func() {
		start := time.Now()
		for dropped.partitions == 0 && dropped.err == nil && time.Since(start) < load-2*time.Second {
			dropped.attempts++
			sweep, err := store.DropPartitions(ctx, oldest.AddDate(0, 0, o.retentionDropDays), time.Time{})
			dropped.partitions, dropped.err = sweep.Dropped, err
		}
		dropped.took = time.Since(start)
	})
	if err != nil {
		return err
	}
	if dropped.err != nil {
		return dropped.err
	}
	after, err := historySize(ctx, full.db)
	if err != nil {
		return err
	}
	fmt.Printf("\nretention under load (%d clients of synchronous 1-item jobs, %s each): dropping %d day(s) from %s: %d partitions dropped in %d attempts, %.0f ms\n",
		syncClients, load, o.retentionDropDays, oldest.Format(time.DateOnly), dropped.partitions, dropped.attempts, ms(dropped.took))
	fmt.Printf("history tables (jobs and the tables of their rows, with indexes and TOAST): %.1f MiB before, %.1f MiB after (%.1f%%), of a %d-day history with %d day(s) dropped\n\n",
		float64(before)/(1<<20), float64(after)/(1<<20), 100*float64(after)/float64(before), o.days, o.retentionDropDays)
	fmt.Println("| synchronous jobs | jobs | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
	for _, r := range []struct {
		name string
		lat  []time.Duration
	}{{"without the drop", without}, {"while the drop runs", with}} {
		fmt.Printf("| %s | %d | %.1f | %.1f | %.1f |\n", r.name, len(r.lat), ms(quantile(r.lat, 0.5)), ms(quantile(r.lat, 0.99)), ms(r.lat[len(r.lat)-1]))
	}
	return nil
}

// syncLoad posts body from syncClients clients for d and returns the
// sorted latencies; during runs once, a second into the load.
func syncLoad(base, token string, body []byte, d time.Duration, during func()) ([]time.Duration, error) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: syncClients}}
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for range syncClients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				start := time.Now()
				err := postJob(client, base, token, body)
				took := time.Since(start)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, took)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	if during != nil {
		time.Sleep(time.Second)
		during()
	}
	wg.Wait()
	slices.Sort(lat)
	if len(lat) == 0 && firstErr == nil {
		firstErr = fmt.Errorf("no job completed")
	}
	return lat, firstErr
}

func postJob(client *http.Client, base, token string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/jobs", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil && (resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte("JOB_STATUS_COMPLETED"))) {
		err = fmt.Errorf("POST /v1/jobs: %d %s", resp.StatusCode, answer)
	}
	return err
}

// historySize is the size in bytes of the history tables' partitions in
// the database's schema: tables, their indexes and TOAST
// (pg_total_relation_size of each partition). The synchronous load writes
// a few MiB into today's partitions meanwhile.
func historySize(ctx context.Context, db *persistence.DB) (int64, error) {
	var n int64
	err := db.GetContext(ctx, &n, `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		JOIN pg_namespace ns ON ns.oid = p.relnamespace
		WHERE ns.nspname = current_schema() AND p.relname IN
			('jobs', 'job_results', 'label_hits', 'feedback_annotations', 'shadow_evaluations', 'shadow_results')`)
	return n, err
}
