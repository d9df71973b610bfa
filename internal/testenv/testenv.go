// Package testenv holds the tests' view of the machine they run on: what
// a test does when a tool, a service or a privilege it needs is missing.
package testenv

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// InCI reports whether the CI environment variable is true, as
// strconv.ParseBool reads it ("1", "t", "true", "TRUE", ...).
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// SkipUnlessCI is called when something t needs is missing: it skips t
// with the message on a developer's machine, and fails t under CI, where
// every test must run.
func SkipUnlessCI(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("CI=true but %s: CI must provide it", msg)
		return
	}
	t.Skip(msg)
}
