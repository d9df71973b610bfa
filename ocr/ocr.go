// Package ocr reads text out of images with the tesseract command (Debian's
// tesseract-ocr package), run as a subprocess with a deadline, so text
// signals can apply to text found in images (RULES.md). When tesseract is
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
	"os/exec"
	"strings"
	"time"

	"golang.org/x/image/draw"
)

// ErrUnavailable is returned when tesseract is not installed.
var ErrUnavailable = errors.New("OCR is not available: the tesseract command is not installed (apt-get install tesseract-ocr)")

// Tesseract runs the tesseract command.
type Tesseract struct {
	// Path of the binary; empty means look it up on PATH.
	Path string
	// Timeout bounds one recognition (default 30s).
	Timeout time.Duration
	// Language is the tesseract language pack (default "eng").
	Language string
	// LowDetailMaxSide is the longest side images are downsized to for
	// IMAGE_DETAIL_LEVEL_LOW (default 1024).
	LowDetailMaxSide int
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

// Recognize returns the text tesseract finds in img. lowDetail downsizes the
// image first (faster, for IMAGE_DETAIL_LEVEL_LOW).
func (t *Tesseract) Recognize(ctx context.Context, img image.Image, lowDetail bool) (string, error) {
	if err := t.Available(); err != nil {
		return "", err
	}
	if lowDetail {
		img = downsize(img, t.lowSide())
	}
	var in bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&in, img); err != nil {
		return "", err
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lang := t.Language
	if lang == "" {
		lang = "eng"
	}
	// stdin -> stdout; --psm 3 is fully automatic page segmentation.
	cmd := exec.CommandContext(ctx, t.path(), "stdin", "stdout", "-l", lang, "--psm", "3")
	cmd.Stdin = &in
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
