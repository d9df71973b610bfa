//go:build unix

package rules

import "syscall"

// processCPU returns the user+system CPU time of the process in nanoseconds. Benchmarks
// report CPU time per operation besides wall time because the shared machines they run
// on are often loaded, which inflates wall time but much less the CPU time.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
