package main

import (
	"fmt"
	"os"
)

// ensureTempDir creates dir, where the server stages media and spools
// uploads, when it is missing. The container image keeps its root
// filesystem read-only and points TMPDIR into the /data volume
// (docs/operations.md); a volume that starts as an empty directory has no
// tmp/ in it yet, and every media job would fail on it.
func ensureTempDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("temporary directory (TMPDIR): %w", err)
	}
	return nil
}
