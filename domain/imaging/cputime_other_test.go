//go:build !unix

package imaging

import "time"

// processCPU is not available here; benchmarks then report wall time only.
func processCPU() time.Duration { return 0 }

// peakRSS is not available here.
func peakRSS() int64 { return 0 }
