//go:build unix

package imaging

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time this process has used (user + system,
// all threads, so GC work counts). Benchmarks divide it by the images
// processed to get a per-core cost that other processes competing for the
// machine do not inflate, as they do wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS returns the most resident memory this process has had, in bytes
// (Linux reports KiB; 0 where unknown).
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) << 10
}
