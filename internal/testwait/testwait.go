// Package testwait is the tests' one way to wait for something that
// happens in another goroutine, process or container: poll a condition
// until it holds or a deadline passes. A test never sleeps to let
// something happen; it waits for the condition it means.
package testwait

import (
	"testing"
	"time"
)

// The first poll comes at once; the pause between polls doubles from
// firstPause up to maxPause.
const (
	firstPause = time.Millisecond
	maxPause   = 250 * time.Millisecond
)

// For polls cond until it returns true, and fails t (naming what and the
// last error cond returned) if that has not happened within timeout. The
// error says why the condition does not hold yet (the state seen, or a
// request that failed because the thing waited for is not ready): it does
// not end the poll, and is kept for the failure message.
func For(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := poll(timeout, maxPause, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// Busy is For without a pause between polls, for a test that must catch
// a state that lasts only a moment (a process to kill while it is half
// way through something): each poll is as long as cond takes, so cond
// must itself block on something (a database query, a request) rather
// than return at once.
func Busy(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := poll(timeout, 0, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TimeoutError is Until's answer when the condition never held.
type TimeoutError struct {
	Timeout time.Duration
	Last    error // the last error cond returned, if any
}

func (e *TimeoutError) Error() string {
	if e.Last != nil {
		return "not done after " + e.Timeout.String() + "; last error: " + e.Last.Error()
	}
	return "not done after " + e.Timeout.String()
}

func (e *TimeoutError) Unwrap() error { return e.Last }

// Until is For for callers that are not the test goroutine (t.Fatal must
// not be called elsewhere) or that handle a timeout themselves: it
// returns nil when cond held, or a *TimeoutError.
func Until(timeout time.Duration, cond func() (bool, error)) error {
	return poll(timeout, maxPause, cond)
}

// poll calls cond until it holds or timeout has passed, pausing between
// calls from firstPause doubling up to most (no pause if most is 0).
func poll(timeout, most time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	pause := min(firstPause, most)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if !time.Now().Before(deadline) {
			return &TimeoutError{Timeout: timeout, Last: last}
		}
		if pause > 0 {
			time.Sleep(min(pause, time.Until(deadline)))
			pause = min(2*pause, most)
		}
	}
}
