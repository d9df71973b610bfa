package media

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// stagingPrefix names the per-analysis staging directories, so that the
// ones a killed process left behind can be found (RemoveStaleStaging).
const stagingPrefix = "contenteval-media-"

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// RemoveStaleStaging removes staging directories under tempDir ("" =
// os.TempDir()) older than olderThan. An analysis always removes its own
// directory when it returns; only a process killed mid-analysis (SIGKILL,
// OOM, power) leaves one, and that can be gigabytes of video. Call it at
// start with an age well past the longest job, since other processes may
// share the directory. It returns how many it removed.
func RemoveStaleStaging(tempDir string, olderThan time.Duration, now time.Time) (int, error) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	entries, err := os.ReadDir(tempDir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagingPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < olderThan {
			continue
		}
		if err := os.RemoveAll(filepath.Join(tempDir, e.Name())); err == nil {
			n++
		}
	}
	return n, nil
}
