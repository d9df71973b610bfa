package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of a load run, so a typo cannot turn the tool into a flood.
const (
	MaxWorkers  = 1024
	MaxDuration = 10 * time.Minute
)

// LoadConfig describes one closed-loop run: Workers goroutines, each with a
// keep-alive connection of its own, send the next request as soon as the
// previous response is read, first for Warmup (not measured), then for
// Duration or until Requests have completed, whichever comes first.
type LoadConfig struct {
	URL      string      // loopback only
	Header   http.Header // sent with every request
	Workers  int
	Warmup   time.Duration
	Duration time.Duration
	Requests int // 0: no request cap
	// Status is the status every response must have; others count as errors.
	Status int
}

// LoadResult is the measured phase of a run.
type LoadResult struct {
	OK      uint64        // responses with the expected status
	Errors  uint64        // transport errors and unexpected statuses
	Elapsed time.Duration // start of the phase to the last response
	Latency Histogram     // of the OK responses, request written to body read
	// CPU is the CPU time the whole process (server and loader) used during
	// the phase; 0 where it is not measured. Unlike req/s it hardly moves when
	// other processes take CPU from the run.
	CPU time.Duration
	// FirstError describes the first error seen, if any.
	FirstError string
}

// RPS is the throughput of the run in requests per second.
func (r *LoadResult) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// CPUPerRequest is the process CPU time spent per OK request.
func (r *LoadResult) CPUPerRequest() time.Duration {
	if r.OK == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.OK)
}

// Merge folds another run of the same target into r (throughput over the
// summed elapsed time, latencies over all requests).
func (r *LoadResult) Merge(o *LoadResult) {
	r.OK += o.OK
	r.Errors += o.Errors
	r.Elapsed += o.Elapsed
	r.CPU += o.CPU
	r.Latency.Merge(&o.Latency)
	if r.FirstError == "" {
		r.FirstError = o.FirstError
	}
}

func (c *LoadConfig) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("load: url: %w", err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("load: %s is not a loopback address; this tool only drives local servers", host)
	}
	switch {
	case c.Workers < 1 || c.Workers > MaxWorkers:
		return fmt.Errorf("load: workers %d: want 1..%d", c.Workers, MaxWorkers)
	case c.Duration <= 0 && c.Requests <= 0:
		return errors.New("load: set a duration or a request count")
	case c.Duration > MaxDuration || c.Warmup > MaxDuration:
		return fmt.Errorf("load: durations are capped at %v", MaxDuration)
	case c.Requests < 0:
		return errors.New("load: negative request count")
	}
	if c.Duration <= 0 {
		c.Duration = MaxDuration // bounded even when only a count is given
	}
	if c.Status == 0 {
		c.Status = http.StatusOK
	}
	return nil
}

// Load runs cfg and returns the measured phase. It stops early, with an
// error, when ctx is done.
func Load(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Workers,
		MaxIdleConnsPerHost: cfg.Workers,
		MaxConnsPerHost:     cfg.Workers,
		DisableCompression:  true,
		IdleConnTimeout:     time.Minute,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	if cfg.Warmup > 0 {
		if _, err := phase(ctx, client, cfg, cfg.Warmup, 0); err != nil {
			return nil, err
		}
	}
	return phase(ctx, client, cfg, cfg.Duration, cfg.Requests)
}

// phase runs the workers until d has passed or limit requests (0: none) were
// started. Requests in flight when time is up are completed and counted, so
// no connection is torn down between warm-up and measurement.
func phase(ctx context.Context, client *http.Client, cfg LoadConfig, d time.Duration, limit int) (*LoadResult, error) {
	var (
		stop    atomic.Bool
		started atomic.Int64
		mu      sync.Mutex
		wg      sync.WaitGroup
		res     = &LoadResult{}
	)
	begin, cpu := time.Now(), processCPU()
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := new(LoadResult)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.URL, nil)
			if err != nil {
				panic(err) // validated above
			}
			for k, v := range cfg.Header {
				req.Header[k] = v
			}
			for !stop.Load() && ctx.Err() == nil {
				if limit > 0 && started.Add(1) > int64(limit) {
					break
				}
				t0 := time.Now()
				status, err := roundTrip(client, req)
				lat := time.Since(t0)
				switch {
				case err != nil:
					local.Errors++
					if local.FirstError == "" {
						local.FirstError = err.Error()
					}
				case status != cfg.Status:
					local.Errors++
					if local.FirstError == "" {
						local.FirstError = fmt.Sprintf("status %d, want %d", status, cfg.Status)
					}
				default:
					local.OK++
					local.Latency.Record(lat)
				}
			}
			mu.Lock()
			res.Merge(local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.Elapsed, res.CPU = time.Since(begin), processCPU()-cpu
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

// roundTrip sends req and reads the whole body, so the connection goes back
// to the pool for the next request.
func roundTrip(client *http.Client, req *http.Request) (int, error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}
