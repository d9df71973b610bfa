package deploy

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// This module does not depend on the server's: these are the deploy
// tests' forms of the server's internal/testenv and internal/testwait.

// skipUnlessCI skips t with the message, or fails it under CI (CI parsed
// by strconv.ParseBool), where the deploy tests must run.
func skipUnlessCI(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatalf("CI=true but %s: CI must provide it", msg)
	}
	t.Skip(msg)
}

// waitFor polls cond every interval until it holds, failing t with what
// and cond's last error after timeout.
func waitFor(t *testing.T, timeout, interval time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("waiting for %s: not done after %s (last: %v)", what, timeout, err)
		}
		time.Sleep(interval)
	}
}
