package ocr

import (
	"context"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeTesseract writes a script standing in for tesseract: each run marks itself
// running in dir, appends how many runs are running to dir/concurrent, saves its
// stdin, then waits for dir/go before it ends and prints its pid.
func fakeTesseract(t *testing.T, dir string) string {
	t.Helper()
	script := `#!/bin/sh
d='` + dir + `'
mkdir "$d/run.$$"
ls -d "$d"/run.* | wc -l >> "$d/concurrent"
cat > "$d/in.$$.png"
while [ ! -e "$d/go" ]; do sleep 0.01; done
rmdir "$d/run.$$"
echo "text $$"
`
	path := filepath.Join(dir, "tesseract")
	require.NoError(t, os.WriteFile(path, []byte(script), 0o700))
	return path
}

func countFiles(t *testing.T, pattern string) int {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	return len(m)
}

// TestRecognizeBoundsRuns starts more recognitions than MaxRuns: the others wait
// for a run rather than start tesseract, and each run gets the whole image as PNG
// on its stdin.
func TestRecognizeBoundsRuns(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("needs /bin/sh for the stand-in tesseract")
	}
	img := image.NewGray(image.Rect(0, 0, 300, 200))
	for _, tc := range []struct {
		name          string
		maxRuns, runs int
	}{
		{"one at a time", 1, 3},
		{"two at a time", 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ts := &Tesseract{Path: fakeTesseract(t, dir), MaxRuns: tc.maxRuns}
			texts := make(chan string, tc.runs)
			errs := make(chan error, tc.runs)
			for range tc.runs {
				go func() {
					text, err := ts.Recognize(context.Background(), img, false)
					texts <- text
					errs <- err
				}()
			}
			// No run ends before dir/go exists: wait until every recognition has
			// either started tesseract or is waiting for a run.
			for countFiles(t, filepath.Join(dir, "run.*"))+int(ts.waiting.Load()) < tc.runs {
				runtime.Gosched()
			}
			require.Equal(t, tc.maxRuns, countFiles(t, filepath.Join(dir, "run.*")), "tesseract runs at once")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o600))
			for range tc.runs {
				require.NoError(t, <-errs)
				require.True(t, strings.HasPrefix(<-texts, "text "))
			}
			counts, err := os.ReadFile(filepath.Join(dir, "concurrent"))
			require.NoError(t, err)
			for _, line := range strings.Fields(string(counts)) {
				n, err := strconv.Atoi(line)
				require.NoError(t, err)
				require.LessOrEqual(t, n, tc.maxRuns, "tesseract runs at once")
			}
			inputs, err := filepath.Glob(filepath.Join(dir, "in.*.png"))
			require.NoError(t, err)
			require.Len(t, inputs, tc.runs)
			for _, in := range inputs {
				f, err := os.Open(in)
				require.NoError(t, err)
				cfg, err := png.DecodeConfig(f)
				f.Close()
				require.NoError(t, err)
				require.Equal(t, [2]int{300, 200}, [2]int{cfg.Width, cfg.Height})
			}
		})
	}
}
