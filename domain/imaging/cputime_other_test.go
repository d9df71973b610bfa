//go:build !unix

package imaging

import "time"

// processCPU is not available here; benchmarks then report wall time only.
func processCPU() time.Duration { return 0 }
