package main

import (
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the CPU time of the calling OS thread (callers lock it):
// on a shared machine, wall-clock latency includes the time other
// processes held the core; this does not.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
