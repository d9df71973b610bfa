// Package ocr reads text out of images with the tesseract command (Debian's
// tesseract-ocr package), run as a subprocess with a deadline, so text
// signals can apply to text found in images (docs/rules.md#signals). When tesseract is
// not installed the service says so at start and in job errors; it never
// pretends an image has no text.
package ocr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/image/draw"

	"github.com/contenteval/contenteval/domain/traces"
)

// ErrUnavailable is returned when tesseract is not installed.
var ErrUnavailable = errors.New("OCR is not available: the tesseract command is not installed (apt-get install tesseract-ocr)")

// Tesseract runs the tesseract command. Use it by pointer: it counts its runs.
type Tesseract struct {
	// Path of the binary; empty means look it up on PATH.
	Path string
	// Timeout bounds one recognition (default 30s), not the wait for a run.
	Timeout time.Duration
	// Language is the tesseract language pack (default "eng").
	Language string
	// LowDetailMaxSide is the longest side images are downsized to for
	// IMAGE_DETAIL_LEVEL_LOW (default 1024).
	LowDetailMaxSide int
	// MaxRuns bounds the recognitions running at once (default GOMAXPROCS);
	// more wait for a run to end. Each run holds its own copy of the image,
	// several times its pixels, and uses one core, so more runs than cores
	// would take memory without going faster.
	MaxRuns int

	runsOnce sync.Once
	runs     chan struct{} // a token per running recognition
	waiting  atomic.Int64  // recognitions waiting for a run
}

// Available reports whether the command can be run, with the reason if not.
func (t *Tesseract) Available() error {
	if _, err := exec.LookPath(t.path()); err != nil {
		return ErrUnavailable
	}
	return nil
}

func (t *Tesseract) path() string {
	if t.Path != "" {
		return t.Path
	}
	return "tesseract"
}

// startRun waits for a free run, or for ctx to end.
func (t *Tesseract) startRun(ctx context.Context) (end func(), err error) {
	t.runsOnce.Do(func() {
		n := t.MaxRuns
		if n <= 0 {
			n = runtime.GOMAXPROCS(0)
		}
		t.runs = make(chan struct{}, n)
	})
	t.waiting.Add(1)
	defer t.waiting.Add(-1)
	select {
	case t.runs <- struct{}{}:
		return func() { <-t.runs }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Recognize returns the text tesseract finds in img. lowDetail downsizes the
// image first (faster, for IMAGE_DETAIL_LEVEL_LOW). It waits for a run while
// MaxRuns are running, as long as ctx lasts, and keeps no reference to img
// once it returns.
func (t *Tesseract) Recognize(ctx context.Context, img image.Image, lowDetail bool) (text string, err error) {
	if err := t.Available(); err != nil {
		return "", err
	}
	lang := t.Language
	if lang == "" {
		lang = "eng"
	}
	// The span covers the wait for a run too: that wait is where a slow
	// image job spends its time when OCR is the bottleneck. The image's
	// size is no content; its text is and stays out.
	ctx, span := traces.Start(ctx, "ocr.recognize")
	if span.IsRecording() {
		b := img.Bounds()
		span.SetAttributes(traces.Tool("tesseract"), attribute.String("contenteval.ocr.language", lang),
			attribute.Bool("contenteval.ocr.low_detail", lowDetail),
			attribute.Int("contenteval.image.width", b.Dx()), attribute.Int("contenteval.image.height", b.Dy()))
	}
	defer func() { traces.Fail(span, err); span.End() }()
	end, err := t.startRun(ctx)
	if err != nil {
		return "", err
	}
	defer end()
	if lowDetail {
		img = downsize(img, t.lowSide())
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// stdin -> stdout; --psm 3 is fully automatic page segmentation.
	cmd := exec.CommandContext(ctx, t.path(), "stdin", "stdout", "-l", lang, "--psm", "3")
	// The PNG is streamed to tesseract as it is encoded: held whole, it would
	// be another copy of the pixels (150 MB for a 50 MP photo), outside the
	// decode budget.
	in, encoded := encodePNG(img)
	defer func() {
		// tesseract may exit without reading it all: unblock the encoder and
		// wait for it, so that img is not used after Recognize returns.
		in.Close()
		<-encoded
	}()
	cmd.Stdin = in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limitedBuffer{buf: &out, max: 1 << 20}, &limitedBuffer{buf: &stderr, max: 64 << 10}
	cmd.Env = []string{"OMP_THREAD_LIMIT=1"} // one core per recognition; workers run in parallel
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("OCR timed out after %s", timeout)
		}
		return "", fmt.Errorf("OCR failed: %s", firstLine(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// encodePNG encodes img as PNG into the returned pipe from a goroutine, which
// ends (closing encoded) once the image is written or the pipe is closed.
func encodePNG(img image.Image) (*io.PipeReader, <-chan struct{}) {
	r, w := io.Pipe()
	encoded := make(chan struct{})
	go func() {
		defer close(encoded)
		w.CloseWithError((&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, img))
	}()
	return r, encoded
}

func (t *Tesseract) lowSide() int {
	if t.LowDetailMaxSide > 0 {
		return t.LowDetailMaxSide
	}
	return 1024
}

// downsize scales img so its longest side is at most max.
func downsize(img image.Image, max int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= max && h <= max {
		return img
	}
	if w >= h {
		h, w = h*max/w, max
	} else {
		w, h = w*max/h, max
	}
	dst := image.NewRGBA(image.Rect(0, 0, max1(w), max1(h)))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	return dst
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// limitedBuffer keeps at most max bytes: a runaway subprocess cannot grow
// our memory.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		if len(p) > room {
			l.buf.Write(p[:room])
		} else {
			l.buf.Write(p)
		}
	}
	return len(p), nil
}
