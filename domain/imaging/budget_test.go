package imaging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/contenteval/contenteval/domain"
)

func TestDecodedBytes(t *testing.T) {
	t.Parallel()
	const w, h = 100, 50
	baseline := encode(t, FormatJPEG, testImage(w, h))
	progressive := bytes.Replace(baseline, []byte{0xff, 0xc0}, []byte{0xff, 0xc2}, 1)
	pngData := encode(t, FormatPNG, testImage(w, h))
	interlaced := bytes.Clone(pngData)
	interlaced[28] = 1
	tests := []struct {
		name  string
		model color.Model
		f     Format
		data  []byte
		want  int64
	}{
		{"palette", color.Palette{color.Black, color.White}, FormatGIF, nil, w * h},
		{"gray", color.GrayModel, FormatPNG, pngData, w * h},
		{"gray16", color.Gray16Model, FormatPNG, pngData, 2 * w * h},
		{"NRGBA", color.NRGBAModel, FormatPNG, pngData, 4 * w * h},
		{"NRGBA64", color.NRGBA64Model, FormatPNG, pngData, 8 * w * h},
		{"interlaced PNG holds its passes too", color.NRGBAModel, FormatPNG, interlaced, 2 * 4 * w * h},
		{"baseline JPEG", color.YCbCrModel, FormatJPEG, baseline, 3 * w * h},
		{"progressive JPEG holds its coefficients", color.YCbCrModel, FormatJPEG, progressive, 3*w*h + 3*4*w*h},
		{"CMYK JPEG", color.CMYKModel, FormatJPEG, baseline, 8 * w * h},
		{"TIFF holds its strips", color.RGBAModel, FormatTIFF, nil, 2 * 4 * w * h},
		{"lossy WebP", color.YCbCrModel, FormatWebP, nil, 3 * w * h},
		{"lossless WebP", color.NRGBAModel, FormatWebP, nil, 2 * 4 * w * h},
		{"unknown model", color.ModelFunc(func(c color.Color) color.Color { return c }), FormatBMP, nil, 8 * w * h},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := decodedBytes(image.Config{ColorModel: tc.model, Width: w, Height: h}, tc.f, tc.data); got != tc.want {
				t.Errorf("decodedBytes = %d, want %d", got, tc.want)
			}
		})
	}
	// The estimate covers what the decoder really allocates for the image.
	for _, f := range []Format{FormatPNG, FormatJPEG, FormatGIF, FormatBMP, FormatTIFF} {
		data := encode(t, f, testImage(w, h))
		cfg, _, err := DecodeConfig(data, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := Decode(data, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if est, got := decodedBytes(cfg, f, data), pixelBytes(img); est < got {
			t.Errorf("%s: estimate %d bytes, image holds %d", f, est, got)
		}
	}
}

// pixelBytes is the size of an image's pixel buffers.
func pixelBytes(img image.Image) int64 {
	switch m := img.(type) {
	case *image.YCbCr:
		return int64(len(m.Y) + len(m.Cb) + len(m.Cr))
	case *image.NRGBA:
		return int64(len(m.Pix))
	case *image.RGBA:
		return int64(len(m.Pix))
	case *image.Paletted:
		return int64(len(m.Pix))
	case *image.Gray:
		return int64(len(m.Pix))
	}
	b := img.Bounds()
	return int64(b.Dx()*b.Dy()) * 8
}

// holdAll decodes data under b from n goroutines; each reports its reservation on
// acquired and keeps it until a token arrives on release.
func holdAll(t *testing.T, b *Budget, data []byte, n int) (acquired chan func(), errs chan error) {
	t.Helper()
	acquired, errs = make(chan func()), make(chan error, n)
	for range n {
		go func() {
			_, _, release, err := b.Decode(context.Background(), data, Limits{})
			if err != nil {
				errs <- err
				return
			}
			acquired <- release
		}()
	}
	return acquired, errs
}

func TestBudgetBoundsConcurrentDecodes(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(64, 32))
	one, err := Reservation(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		size    int64
		decodes int
		atOnce  int // images that fit in the budget together
	}{
		{"room for one", one, 5, 1},
		{"room for two and a half", 5 * one / 2, 8, 2},
		{"room for all", 8 * one, 8, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudget(tc.size)
			acquired, errs := holdAll(t, b, data, tc.decodes)
			var held []func()
			for done := 0; done < tc.decodes; {
				// Fill the budget, then check that the next decode must wait: the
				// budget has no room left for it.
				for len(held) < min(tc.atOnce, tc.decodes-done) {
					select {
					case r := <-acquired:
						held = append(held, r)
					case err := <-errs:
						t.Fatal(err)
					}
				}
				if got := b.Held(); got != int64(len(held))*one || got > tc.size {
					t.Fatalf("%d bytes held by %d images of %d bytes, budget %d", got, len(held), one, tc.size)
				}
				if len(held) == tc.atOnce && b.fitsNow(one) {
					t.Fatalf("budget of %d has room for another %d bytes with %d held", tc.size, one, b.Held())
				}
				held[0]()
				held[0]() // a second release is a no-op
				held = held[1:]
				done++
			}
			if p := b.peakBytes(); p > tc.size || p != int64(tc.atOnce)*one {
				t.Errorf("peak %d bytes, want %d within the budget of %d", p, int64(tc.atOnce)*one, tc.size)
			}
			if b.Held() != 0 {
				t.Errorf("%d bytes still held after every release", b.Held())
			}
		})
	}
}

// fitsNow reports whether n more bytes would be reserved without waiting.
func (b *Budget) fitsNow(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len() == 0 && b.fits(n)
}

func (b *Budget) peakBytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

func TestBudgetWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(64, 32))
	one, _ := Reservation(data, Limits{})
	b := NewBudget(one)
	_, _, release, err := b.Decode(context.Background(), data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(context.Background(), 0) }, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			res := make(chan error)
			go func() {
				_, _, _, err := b.Decode(ctx, data, Limits{})
				res <- err
			}()
			cancel() // whether the decode is waiting yet or not, it cannot get room
			if err := <-res; !errors.Is(err, tc.want) {
				t.Fatalf("Decode while the budget is full = %v, want %v", err, tc.want)
			}
		})
	}
	if b.Held() != int64(b.Size()) {
		t.Fatalf("%d bytes held after cancelled waits, want the one image's %d", b.Held(), b.Size())
	}
	release()
	if _, _, release, err := b.Decode(context.Background(), data, Limits{}); err != nil {
		t.Fatalf("Decode after release: %v", err)
	} else {
		release()
	}
}

func TestBudgetRefusesImageLargerThanItself(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(64, 32))
	b := NewBudget(64*32*4 - 1)
	_, _, release, err := b.Decode(context.Background(), data, Limits{})
	var e *Error
	if !errors.As(err, &e) || !e.TooLarge || e.Type != domain.PrecheckFailureInvalidImage || release != nil ||
		!strings.Contains(e.Message, fmt.Sprintf("more than the server's image decode budget of %d bytes", b.Size())) {
		t.Fatalf("Decode = %v (release %v), want a TooLarge INVALID_IMAGE naming the budget", err, release != nil)
	}
	if b.Held() != 0 {
		t.Fatalf("%d bytes held after a refusal", b.Held())
	}
}

func TestBudgetReleasesOnDecodeError(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(64, 32))
	truncated := data[:len(data)/2] // the header is intact, the pixels are not
	b := NewBudget(0)
	if b.Size() != DefaultDecodeBudget {
		t.Fatalf("default size %d, want %d", b.Size(), DefaultDecodeBudget)
	}
	for _, d := range [][]byte{truncated, []byte("not an image")} {
		if _, _, _, err := b.Decode(context.Background(), d, Limits{}); err == nil {
			t.Fatal("Decode of a broken image succeeded")
		}
		if b.Held() != 0 {
			t.Fatalf("%d bytes held after a failed decode", b.Held())
		}
	}
	var none *Budget
	img, f, release, err := none.Decode(context.Background(), data, Limits{})
	if err != nil || img == nil || f != FormatPNG {
		t.Fatalf("nil budget Decode = %v, %v", f, err)
	}
	release()
}

// TestDecodeBudgetPeakRSS measures, in child processes, the peak RSS of decoding
// 50 MP PNGs concurrently with and without a budget. It reports and asserts nothing
// about memory: set CONTENTEVAL_RSS_REPORT=1 to run it.
func TestDecodeBudgetPeakRSS(t *testing.T) {
	if os.Getenv("CONTENTEVAL_RSS_CHILD") != "" {
		rssChild(t)
		return
	}
	if os.Getenv("CONTENTEVAL_RSS_REPORT") == "" {
		t.Skip("set CONTENTEVAL_RSS_REPORT=1 to measure")
	}
	const side = 7071 // 50 MP
	m := image.NewNRGBA(image.Rect(0, 0, side, side))
	for y := range side {
		row := m.Pix[y*m.Stride:]
		for x := range side {
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = uint8(x), uint8(y), uint8(x^y), 255
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, m); err != nil {
		t.Fatal(err)
	}
	m = nil
	file := filepath.Join(t.TempDir(), "50mp.png")
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []string{"none", "1073741824", "419430400"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDecodeBudgetPeakRSS$", "-test.v")
		cmd.Env = append(os.Environ(), "CONTENTEVAL_RSS_CHILD=1", "CONTENTEVAL_RSS_FILE="+file, "CONTENTEVAL_RSS_BUDGET="+budget)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "peak RSS") {
				t.Logf("budget %s: %s", budget, strings.TrimSpace(line))
			}
		}
	}
}

func rssChild(t *testing.T) {
	data, err := os.ReadFile(os.Getenv("CONTENTEVAL_RSS_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	var b *Budget
	if s := os.Getenv("CONTENTEVAL_RSS_BUDGET"); s != "none" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		b = NewBudget(n)
	}
	decodes, err := strconv.Atoi(os.Getenv("CONTENTEVAL_RSS_DECODES"))
	if err != nil {
		decodes = 20 // the job of twenty 50 MP PNGs
	}
	var wg sync.WaitGroup
	for range decodes {
		wg.Go(func() {
			img, _, release, err := b.Decode(context.Background(), data, Limits{})
			if err != nil {
				t.Error(err)
				return
			}
			PDQ(img) // use the pixels, as the precheck does, before letting them go
			release()
		})
	}
	wg.Wait()
	fmt.Printf("peak RSS %d MiB for %d concurrent 50 MP PNG decodes\n", peakRSS()>>20, decodes)
}
