package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/contenteval/contenteval/bench"
)

// request is one measured request; path gives its path on an env (the
// ids differ between databases).
type request struct {
	name string
	path func(e *env) string
}

// requests are the requests of the table. The windows are fixed
// once, so that every alternation asks the same.
func requests(now time.Time) []request {
	const day = 24 * time.Hour
	ts := func(t time.Time) string { return t.Format(time.RFC3339) }
	jobs := func(status string, from, to *time.Time) func(*env) string {
		return func(*env) string {
			v := url.Values{"query.status": {status}}
			if from != nil {
				v.Set("query.createdTimeRange.start", ts(*from))
				v.Set("query.createdTimeRange.end", ts(*to))
			}
			return "/v1/jobs?" + v.Encode()
		}
	}
	metrics := func(since *time.Time) func(*env) string {
		return func(e *env) string {
			p := "/v1/policies/" + e.policyID + "/versions/" + e.versionID + "/metrics"
			if since != nil {
				p += "?" + url.Values{"since": {ts(*since)}}.Encode()
			}
			return p
		}
	}
	weekAgo, monthAgo, monthAgoNext, dayAgo := now.Add(-7*day), now.Add(-30*day), now.Add(-29*day), now.Add(-day)
	return []request{
		{"jobs, status FAILED", jobs("JOB_STATUS_FAILED", nil, nil)},
		{"jobs, status FAILED, last 7 days", jobs("JOB_STATUS_FAILED", &weekAgo, &now)},
		{"jobs, status COMPLETED, 1 day 30 days ago", jobs("JOB_STATUS_COMPLETED", &monthAgo, &monthAgoNext)},
		{"jobs, status CANCELED", jobs("JOB_STATUS_CANCELED", nil, nil)},
		{"jobs, status CANCELED, last day", jobs("JOB_STATUS_CANCELED", &dayAgo, &now)},
		{"version metrics, last day", metrics(&dayAgo)},
		{"version metrics, all time", metrics(nil)},
	}
}

// sample is one run of n requests on one database.
type sample struct {
	p50, p99, serverCPU, dbCPU time.Duration
}

// measureRequests runs every request on both databases, alternating which
// goes first, and prints the medians over the alternations.
func measureRequests(o options, empty, full *env) error {
	reqs := requests(time.Now().UTC())
	samples := map[string]map[*env][]sample{}
	for a := range o.alternations {
		order := []*env{empty, full}
		if a%2 == 1 {
			order = []*env{full, empty}
		}
		for _, r := range reqs {
			if samples[r.name] == nil {
				samples[r.name] = map[*env][]sample{}
			}
			for _, e := range order {
				s, err := measure(e, r.path(e), o.n)
				if err != nil {
					return fmt.Errorf("%s: %w", r.name, err)
				}
				samples[r.name][e] = append(samples[r.name][e], s)
			}
		}
	}
	fmt.Printf("\n| request | empty p50 ms | full p50 ms | full/empty p50 | empty p99 ms | full p99 ms | server CPU ms/req empty / full | database CPU ms/req empty / full |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range reqs {
		e, f := medians(samples[r.name][empty]), medians(samples[r.name][full])
		fmt.Printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f / %.2f | %.2f / %.2f |\n", r.name,
			ms(e.p50), ms(f.p50), ms(f.p50)/ms(e.p50), ms(e.p99), ms(f.p99), ms(e.serverCPU), ms(f.serverCPU), ms(e.dbCPU), ms(f.dbCPU))
	}
	return nil
}

// measure sends n sequential GETs of path to e (after one unmeasured).
func measure(e *env, path string, n int) (sample, error) {
	get := func() (time.Duration, error) {
		req, err := http.NewRequest(http.MethodGet, e.base+path, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+e.token)
		start := time.Now()
		resp, err := e.client.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		return time.Since(start), err
	}
	if _, err := get(); err != nil {
		return sample{}, err
	}
	ctx := context.Background()
	pids := e.backendPIDs(ctx)
	server0, db0 := bench.ProcessCPU(e.server.Process.Pid), pidsCPU(pids)
	lat := make([]time.Duration, 0, n)
	for range n {
		d, err := get()
		if err != nil {
			return sample{}, err
		}
		lat = append(lat, d)
	}
	db1 := pidsCPU(pids)
	server1 := bench.ProcessCPU(e.server.Process.Pid)
	slices.Sort(lat)
	return sample{p50: quantile(lat, 0.5), p99: quantile(lat, 0.99),
		serverCPU: (server1 - server0) / time.Duration(n), dbCPU: (db1 - db0) / time.Duration(n)}, nil
}

func pidsCPU(pids []int) time.Duration {
	var t time.Duration
	for _, p := range pids {
		t += bench.ProcessCPU(p)
	}
	return t
}

// quantile of sorted durations (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// medians is the median of each figure over samples.
func medians(ss []sample) sample {
	med := func(f func(sample) time.Duration) time.Duration {
		v := make([]time.Duration, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return sample{p50: med(func(s sample) time.Duration { return s.p50 }), p99: med(func(s sample) time.Duration { return s.p99 }),
		serverCPU: med(func(s sample) time.Duration { return s.serverCPU }), dbCPU: med(func(s sample) time.Duration { return s.dbCPU })}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
