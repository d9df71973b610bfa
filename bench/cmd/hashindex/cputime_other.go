//go:build !linux

package main

import "time"

// threadCPU is unavailable here: the CPU-time column reads 0.
func threadCPU() time.Duration { return 0 }
