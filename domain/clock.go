package domain

import "time"

// Clock is the service's source of time; tests inject a fixed one.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock, in UTC.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() time.Time { return time.Now().UTC() }
