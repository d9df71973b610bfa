package access

import (
	"math"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
	"golang.org/x/time/rate"
)

// RateLimiter keeps one token bucket per account. Buckets live in this
// process only: with several replicas an account gets the rate on each, so
// operators divide the per-account setting by the replica count.
type RateLimiter struct {
	defaults domain.Limits
	clock    domain.Clock
	mu       sync.Mutex
	buckets  map[string]*bucket
}

type bucket struct {
	limiter *rate.Limiter
	rps     float64
	burst   int
}

// NewRateLimiter returns a limiter using defaults for accounts without their
// own RequestsPerSecond/Burst.
func NewRateLimiter(defaults domain.Limits, clock domain.Clock) *RateLimiter {
	return &RateLimiter{defaults: defaults, clock: clock, buckets: map[string]*bucket{}}
}

// Allow takes one token from the account's bucket. When none is left it
// returns a RESOURCE_EXHAUSTED error and how long to wait.
func (r *RateLimiter) Allow(a *domain.Account) (time.Duration, error) {
	rps, burst := a.Limits.RequestsPerSecond, a.Limits.Burst
	if rps <= 0 {
		rps = r.defaults.RequestsPerSecond
	}
	if burst <= 0 {
		burst = r.defaults.Burst
	}
	if rps <= 0 {
		return 0, nil // unlimited
	}
	now := r.clock.Now()
	r.mu.Lock()
	b := r.buckets[a.ID]
	if b == nil || b.rps != rps || b.burst != burst {
		b = &bucket{limiter: rate.NewLimiter(rate.Limit(rps), burst), rps: rps, burst: burst}
		r.buckets[a.ID] = b
	}
	r.mu.Unlock()
	res := b.limiter.ReserveN(now, 1)
	if !res.OK() {
		return time.Second, domain.Errorf(domain.ResourceExhausted, "rate limit exceeded")
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return time.Duration(math.Ceil(d.Seconds())) * time.Second, domain.Errorf(domain.ResourceExhausted, "rate limit exceeded: at most %g requests per second, burst %d", rps, burst)
	}
	return 0, nil
}
