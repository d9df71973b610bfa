package main

// The shadow part: the latency of synchronous jobs with and without a shadow
// version, at one fixed rate, in alternating rounds.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/bench"
)

// roundResult is one open-loop round.
type roundResult struct {
	shadow bool
	h      bench.Histogram
	errors uint64
	first  string
	drain  time.Duration // after the round, until every shadow evaluation was done
	cpu    time.Duration // server CPU per request, the drain included
}

func shadowRounds(s *server, o options, report *strings.Builder) error {
	create := func(key string) (string, error) {
		var p struct {
			Policy struct {
				PolicyID string `json:"policyId"`
			} `json:"policy"`
		}
		err := s.call(http.MethodPost, "/v1/policies", s.policyTk, map[string]any{"policyKey": key, "text": bench.PolicyText()}, &p)
		return p.Policy.PolicyID, err
	}
	plain, err := create("plain")
	if err != nil {
		return err
	}
	shadowed, err := create("shadowed")
	if err != nil {
		return err
	}
	// The shadow differs from the active version in one label's phrase.
	shadowText := strings.Replace(bench.PolicyText(), "forbidden phrase 7\"", "forbidden phrase 7 again\"", 1)
	var v struct {
		PolicyVersion struct {
			PolicyVersionID string `json:"policyVersionId"`
		} `json:"policyVersion"`
	}
	if err := s.call(http.MethodPost, "/v1/policies/"+shadowed+"/versions", s.policyTk,
		map[string]any{"text": shadowText, "mode": "POLICY_VERSION_MODE_SHADOW", "shadowSampleRate": 1}, &v); err != nil {
		return err
	}
	shadowID := v.PolicyVersion.PolicyVersionID
	text := strings.Repeat("the quick brown fox jumps over the lazy dog, then buys a forbidden phrase 7 ", 14)[:1024]
	body := func(policy string) []byte {
		b, _ := json.Marshal(map[string]any{"policyId": policy, "waitForCompletion": true, "contentData": []map[string]string{{"text": text}}})
		return b
	}
	shadowedJobs := 0
	drained := func() (time.Duration, error) {
		start := time.Now()
		for {
			var st struct {
				Evaluated int `json:"evaluated"`
			}
			if err := s.call(http.MethodGet, "/v1/policies/"+shadowed+"/versions/"+shadowID+"/shadow-stats", s.policyTk, nil, &st); err != nil {
				return 0, err
			}
			if st.Evaluated >= shadowedJobs {
				return time.Since(start), nil
			}
			if time.Since(start) > 5*time.Minute {
				return 0, fmt.Errorf("%d of %d shadow evaluations done", st.Evaluated, shadowedJobs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Warm-up, unmeasured: both policies, the plans compiled and cached.
	for _, p := range []string{plain, shadowed} {
		r := openLoop(s, body(p), o.rate, 2*time.Second)
		if p == shadowed {
			shadowedJobs += int(r.h.Count())
		}
		if r.errors > 0 {
			return fmt.Errorf("warm-up: %d errors, first: %s", r.errors, r.first)
		}
	}
	if _, err := drained(); err != nil {
		return err
	}
	var rounds []*roundResult
	for i := range o.rounds {
		// Pairs alternate their order (without-with, with-without), so a
		// drift of the machine's load over the run favours neither.
		withShadow := (i%2 == 1) == (i/2%2 == 0)
		policy := plain
		if withShadow {
			policy = shadowed
		}
		cpu0 := bench.ProcessCPU(s.cmd.Process.Pid)
		r := openLoop(s, body(policy), o.rate, o.duration)
		r.shadow = withShadow
		if withShadow {
			shadowedJobs += int(r.h.Count()) + int(r.errors)
		}
		// The next round starts on a drained queue: a round without the
		// shadow must not run beside the previous round's shadow work.
		if r.drain, err = drained(); err != nil {
			return err
		}
		if n := r.h.Count(); n > 0 {
			r.cpu = (bench.ProcessCPU(s.cmd.Process.Pid) - cpu0) / time.Duration(n)
		}
		rounds = append(rounds, r)
	}
	fmt.Fprintf(report, "\nShadow: POST /v1/jobs, waitForCompletion, one 1 KiB text item, the 20-label policy, open loop at %g/s for %s per round (latency from each request's scheduled start); rounds alternate a policy without a shadow version and an identical one whose shadow version (sample rate 1) evaluates every job; each round starts once the shadow queue is drained.\n\n", o.rate, o.duration)
	fmt.Fprintf(report, "| round | shadow | requests | errors | mean | p50 | p99 | max | shadow queue drained after | server CPU per request |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range rounds {
		fmt.Fprintf(report, "| %d | %v | %d | %d | %s | %s | %s | %s | %s | %s |\n", i+1, r.shadow, r.h.Count(), r.errors,
			ms(r.h.Mean()), ms(r.h.Quantile(0.5)), ms(r.h.Quantile(0.99)), ms(r.h.Max()), r.drain.Round(time.Millisecond), ms(r.cpu))
	}
	var meanRatios, p50Ratios []float64
	var with, without bench.Histogram
	for i := 0; i+1 < len(rounds); i += 2 {
		a, b := rounds[i], rounds[i+1]
		if a.shadow {
			a, b = b, a
		}
		meanRatios = append(meanRatios, float64(b.h.Mean())/float64(a.h.Mean()))
		p50Ratios = append(p50Ratios, float64(b.h.Quantile(0.5))/float64(a.h.Quantile(0.5)))
		without.Merge(&a.h)
		with.Merge(&b.h)
	}
	fmt.Fprintf(report, "\nWith/without, per pair of rounds: mean %s, p50 %s. **Median: mean %.3f, p50 %.3f** (target <= 1.05). Pooled: without mean %s p50 %s p99 %s; with mean %s p50 %s p99 %s.\n",
		ratios(meanRatios), ratios(p50Ratios), median(meanRatios), median(p50Ratios),
		ms(without.Mean()), ms(without.Quantile(0.5)), ms(without.Quantile(0.99)), ms(with.Mean()), ms(with.Quantile(0.5)), ms(with.Quantile(0.99)))
	for _, r := range rounds {
		if r.first != "" {
			fmt.Fprintf(report, "\nFirst error: %s\n", r.first)
			break
		}
	}
	return nil
}

// openLoop sends body to POST /v1/jobs at rate for d, each request at its
// scheduled time whatever the others do, and measures each from then.
func openLoop(s *server, body []byte, rate float64, d time.Duration) *roundResult {
	r := &roundResult{}
	n := int(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs atomic.Uint64
	sem := make(chan struct{}, 512)
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := post(s, body)
			lat := time.Since(at)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs.Add(1)
				if r.first == "" {
					r.first = err.Error()
				}
				return
			}
			r.h.Record(lat)
		}()
	}
	wg.Wait()
	r.errors = errs.Load()
	return r
}

func post(s *server, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, s.base+"/v1/jobs", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.policyTk)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte("JOB_STATUS_COMPLETED")) {
		return fmt.Errorf("%d %.200s", resp.StatusCode, answer)
	}
	return nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ratios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3f", x)
	}
	return strings.Join(parts, ", ")
}
