//go:build !unix

package persistence

import "context"

// lockFile is a no-op where flock is unavailable: concurrent first-time
// migrations of one SQLite file from two processes may then fail (and
// succeed when retried).
func lockFile(context.Context, string) (func(), error) { return func() {}, nil }
