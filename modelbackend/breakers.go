package modelbackend

import (
	"context"
	"errors"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/sony/gobreaker/v2"
)

// A backend's circuit breakers. Failures are counted per account, so one
// account whose calls fail (content long enough to time out, say) opens
// only its own breaker and the other accounts keep getting verdicts. A
// backend-wide breaker fails every account fast, but only once the failures
// since the last success span several accounts: fewer when they are the
// server's own (unreachable, 5xx) than when content could have caused them
// (timeouts, malformed answers, 429).
const (
	breakerFailures = 5                // consecutive failed calls that open a breaker
	breakerOpenFor  = 30 * time.Second // before one trial call
	// wideBreakerAccounts and wideBreakerServerAccounts: how many accounts
	// must have failed since the last success for the backend-wide breaker
	// to open, any failure and the server's own.
	wideBreakerAccounts       = 3
	wideBreakerServerAccounts = 2
	// maxAccountBreakers bounds the per-account breakers (least recently
	// used go first; an evicted account starts closed again).
	maxAccountBreakers = 4096
)

type breakers struct {
	name     string
	mu       sync.Mutex // makes a get-or-create of an account's breaker atomic
	accounts *lru.Cache[string, *gobreaker.CircuitBreaker[*answer]]
	wide     *gobreaker.CircuitBreaker[*answer]
	spread   failureSpread
}

func newBreakers(name string) *breakers {
	b := &breakers{name: name}
	b.accounts, _ = lru.New[string, *gobreaker.CircuitBreaker[*answer]](maxAccountBreakers) // only a size below 1 fails
	b.wide = gobreaker.NewCircuitBreaker[*answer](gobreaker.Settings{
		Name: name, MaxRequests: 1, Timeout: breakerOpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= breakerFailures && b.spread.spansAccounts()
		},
		// Each new state starts counting afresh, as gobreaker's counts do.
		OnStateChange: func(string, gobreaker.State, gobreaker.State) { b.spread.reset() },
		IsSuccessful:  callSucceeded,
		IsExcluded:    callExcluded,
	})
	return b
}

func (b *breakers) forAccount(account string) *gobreaker.CircuitBreaker[*answer] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cb, ok := b.accounts.Get(account); ok {
		return cb
	}
	cb := gobreaker.NewCircuitBreaker[*answer](gobreaker.Settings{
		Name: b.name, MaxRequests: 1, Timeout: breakerOpenFor,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= breakerFailures },
		IsSuccessful: callSucceeded,
		IsExcluded:   callExcluded,
	})
	b.accounts.Add(account, cb)
	return cb
}

// execute runs call through account's breaker and the backend-wide one.
func (b *breakers) execute(account string, call func() (*answer, error)) (*answer, error) {
	a, err := b.forAccount(account).Execute(func() (*answer, error) {
		a, err := b.wide.Execute(func() (*answer, error) {
			a, err := call()
			b.spread.record(account, err)
			return a, err
		})
		if breakerRefused(err) {
			return nil, &callError{reason: "circuit_open", msg: "circuit open after repeated failures for several accounts"}
		}
		return a, err
	})
	if breakerRefused(err) {
		return nil, &callError{reason: "circuit_open", msg: "circuit open after repeated failures of this account's calls"}
	}
	return a, err
}

func breakerRefused(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// callSucceeded: a request the server refused as malformed (4xx) says
// nothing about the server's health.
func callSucceeded(err error) bool {
	var ce *callError
	if errors.As(err, &ce) {
		return ce.reason == "http_4xx"
	}
	return err == nil
}

// callExcluded: a caller that gave up, or a call the backend-wide breaker
// refused, is neither the account's success nor its failure.
func callExcluded(err error) bool {
	var ce *callError
	return errors.Is(err, context.Canceled) || (errors.As(err, &ce) && ce.reason == "circuit_open")
}

// failureSpread is the accounts whose calls failed since the last success,
// each set holding no more accounts than the thresholds need.
type failureSpread struct {
	mu     sync.Mutex
	any    map[string]bool
	server map[string]bool // unreachable or 5xx
}

func (s *failureSpread) record(account string, err error) {
	if callExcluded(err) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if callSucceeded(err) {
		s.any, s.server = nil, nil
		return
	}
	s.any = addBounded(s.any, account, wideBreakerAccounts)
	var ce *callError
	if errors.As(err, &ce) && (ce.reason == "unreachable" || ce.reason == "http_5xx") {
		s.server = addBounded(s.server, account, wideBreakerServerAccounts)
	}
}

func addBounded(set map[string]bool, account string, bound int) map[string]bool {
	if set == nil {
		set = map[string]bool{}
	}
	if len(set) < bound {
		set[account] = true
	}
	return set
}

func (s *failureSpread) spansAccounts() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.any) >= wideBreakerAccounts || len(s.server) >= wideBreakerServerAccounts
}

func (s *failureSpread) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.any, s.server = nil, nil
}
