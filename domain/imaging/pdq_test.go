package imaging

import (
	"bufio"
	"bytes"
	"image"
	"image/color"
	"image/color/palette"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pdqVector is one row of testdata/pdq/expected.tsv, a copy of the shared
// reference vectors (shared/testdata/pdq) so that CI needs nothing outside
// the repository.
type pdqVector struct {
	file    string
	hash    Hash
	quality int
	check   string // "hash+quality" or "quality"
}

func readPDQVectors(t testing.TB) []pdqVector {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "pdq", "expected.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []pdqVector
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 1 {
			continue // header
		}
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 4 {
			t.Fatalf("expected.tsv:%d: %d fields", line, len(fields))
		}
		h, err := ParseHash(fields[1])
		if err != nil {
			t.Fatalf("expected.tsv:%d: %v", line, err)
		}
		q, err := strconv.Atoi(fields[2])
		if err != nil {
			t.Fatalf("expected.tsv:%d: %v", line, err)
		}
		out = append(out, pdqVector{file: fields[0], hash: h, quality: q, check: fields[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPDQReferenceVectors checks PDQ against the hashes Meta's reference
// C++ core gives for the same decoded pixels: within 2 bits and quality
// within 5; "quality" rows are near-flat images whose hash is
// float-rounding noise, so only their quality is checked.
func TestPDQReferenceVectors(t *testing.T) {
	t.Parallel()
	vectors := readPDQVectors(t)
	if len(vectors) < 30 {
		t.Fatalf("only %d vectors", len(vectors))
	}
	maxBits, maxQ := 0, 0
	for _, v := range vectors {
		data, err := os.ReadFile(filepath.Join("testdata", "pdq", v.file))
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := Decode(data, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", v.file, err)
		}
		h, q := PDQ(img)
		d := h.Distance(v.hash)
		dq := abs(q - v.quality)
		maxQ = max(maxQ, dq)
		if v.check == "hash+quality" {
			maxBits = max(maxBits, d)
			if d > 2 {
				t.Errorf("%s: hash %s is %d bits from %s", v.file, h, d, v.hash)
			}
		}
		if dq > 5 {
			t.Errorf("%s: quality %d, want %d", v.file, q, v.quality)
		}
		t.Logf("%-36s bits=%d quality=%d/%d", v.file, d, q, v.quality)
	}
	t.Logf("max bit difference %d, max quality difference %d over %d vectors", maxBits, maxQ, len(vectors))
}

// hidden hides the concrete type of an image, forcing PDQ's generic path.
type hidden struct{ image.Image }

// TestPDQFastPathsMatchGeneric checks every fast pixel path against the
// generic color.NRGBAModel path, including images whose bounds do not
// start at the origin.
func TestPDQFastPathsMatchGeneric(t *testing.T) {
	t.Parallel()
	src := testImage(150, 90)
	ycc := image.NewYCbCr(src.Bounds(), image.YCbCrSubsampleRatio420)
	for y := range 90 {
		for x := range 150 {
			c := src.NRGBAAt(x, y)
			yy, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
			ycc.Y[ycc.YOffset(x, y)] = yy
			ycc.Cb[ycc.COffset(x, y)] = cb
			ycc.Cr[ycc.COffset(x, y)] = cr
		}
	}
	gray := image.NewGray(src.Bounds())
	pal := image.NewPaletted(src.Bounds(), palette.Plan9)
	for y := range 90 {
		for x := range 150 {
			gray.Set(x, y, src.At(x, y))
			pal.Set(x, y, src.At(x, y))
		}
	}
	translucent := image.NewNRGBA(src.Bounds())
	copy(translucent.Pix, src.Pix)
	for i := 3; i < len(translucent.Pix); i += 4 {
		translucent.Pix[i] = uint8(i) // alpha is ignored, not premultiplied
	}
	rgba := image.NewRGBA(src.Bounds())
	for i := 0; i < len(rgba.Pix); i += 4 {
		a := uint8(255)
		if i%12 == 0 {
			a = uint8(i / 4) // some translucent, some transparent pixels
		}
		for c := range 3 {
			rgba.Pix[i+c] = uint8(uint32(src.Pix[i+c]) * uint32(a) / 255) // premultiplied
		}
		rgba.Pix[i+3] = a
	}
	gray16 := image.NewGray16(src.Bounds())
	for i := range gray16.Pix {
		gray16.Pix[i] = src.Pix[(i*7)%len(src.Pix)]
	}
	images := map[string]image.Image{
		"rgba":        rgba,
		"gray16":      gray16,
		"nrgba":       src,
		"translucent": translucent,
		"ycbcr420":    ycc,
		"nycbcra":     &image.NYCbCrA{YCbCr: *ycc, A: make([]uint8, 150*90), AStride: 150},
		"gray":        gray,
		"paletted":    pal,
		"subimage":    src.SubImage(image.Rect(13, 7, 140, 88)),
		"ycc sub":     ycc.SubImage(image.Rect(13, 7, 140, 88)),
		"ycc even":    ycc.SubImage(image.Rect(14, 8, 141, 89)),
		"ycc422":      yccWithRatio(src, image.YCbCrSubsampleRatio422),
		"ycc444":      yccWithRatio(src, image.YCbCrSubsampleRatio444),
		"ycc411":      yccWithRatio(src, image.YCbCrSubsampleRatio411),
	}
	for name, m := range images {
		want, wq := PDQ(hidden{m})
		if _, ok := m.(*image.NYCbCrA); ok {
			// The generic path premultiplies by alpha (here 0) and divides
			// it out again, losing the colour; the fast path drops alpha.
			want, wq = PDQ(hidden{ycc})
		}
		got, q := PDQ(m)
		if got != want || q != wq {
			t.Errorf("%s: fast path %s %d, generic %s %d", name, got, q, want, wq)
		}
	}
}

func yccWithRatio(src *image.NRGBA, ratio image.YCbCrSubsampleRatio) *image.YCbCr {
	m := image.NewYCbCr(src.Bounds(), ratio)
	b := src.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := src.NRGBAAt(x, y)
			yy, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
			m.Y[m.YOffset(x, y)] = yy
			m.Cb[m.COffset(x, y)] = cb
			m.Cr[m.COffset(x, y)] = cr
		}
	}
	return m
}

func TestPDQSmallAndFlat(t *testing.T) {
	t.Parallel()
	if h, q := PDQ(testImage(4, 100)); !h.IsZero() || q != 0 {
		t.Errorf("4x100: %s %d, want zero hash and quality 0", h, q)
	}
	flat := image.NewGray(image.Rect(0, 0, 300, 200))
	if _, q := PDQ(flat); q != 0 {
		t.Errorf("flat image quality %d", q)
	}
	// 64x64 skips the blur, as in the reference; 5x5 is the smallest hashed.
	for _, n := range []int{5, 63, 64, 65, 127, 128, 129} {
		if _, q := PDQ(testImage(n, n)); q < 0 || q > 100 {
			t.Errorf("%dx%d quality %d", n, n, q)
		}
	}
}

func TestHashHexAndDistance(t *testing.T) {
	t.Parallel()
	const s = "f8f8f0cee0f4a84f06370a22028f67f0b36e2ed596621e1d33e6b39c4e9c9b22"
	h, err := ParseHash(s)
	if err != nil || h.String() != s {
		t.Fatalf("ParseHash = %s, %v", h, err)
	}
	if up, err := ParseHash(strings.ToUpper(s)); err != nil || up != h {
		t.Errorf("upper case: %s, %v", up, err)
	}
	for _, bad := range []string{"", s[:63], s + "0", "g" + s[1:]} {
		if _, err := ParseHash(bad); err == nil {
			t.Errorf("ParseHash(%q) accepted", bad)
		}
	}
	var z Hash
	if d := h.Distance(h); d != 0 {
		t.Errorf("self distance %d", d)
	}
	all := Hash{}
	for i := range all {
		all[i] = 0xff
	}
	if d := z.Distance(all); d != 256 {
		t.Errorf("zero vs ones %d", d)
	}
	o := h
	o[0] ^= 0x81
	o[31] ^= 0x01
	if d := h.Distance(o); d != 3 {
		t.Errorf("distance %d, want 3", d)
	}
}

// TestDivIsFloat32Division backs the claim on div: multiplying by a float64
// reciprocal and rounding gives the float32 quotient, for window sizes up
// to far beyond any image's.
func TestDivIsFloat32Division(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	for range 2_000_000 {
		n := 1 + rng.IntN(1<<16)
		var sum float32
		switch rng.IntN(3) {
		case 0:
			sum = float32(rng.Float64() * 255 * float64(n)) // a window sum
		case 1:
			sum = math.Float32frombits(rng.Uint32() & 0x7f7fffff) // any finite non-negative
		default:
			sum = float32(rng.IntN(256 * n)) // exact integer sums
		}
		if got, want := div(sum, 1/float64(n)), sum/float32(n); got != want {
			t.Fatalf("%g/%d: div %g, float32 division %g", sum, n, got, want)
		}
	}
}

func TestBox1DSampledMatchesBox1D(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{5, 20, 63, 64, 65, 200, 1000, 1601} {
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(rng.IntN(256)) * 0.587
		}
		win := jaroszWindow(n, 64)
		full := make([]float32, n)
		box1D(in, full, win)
		var at [64]int
		for j := range at {
			at[j] = int(((float64(j) + 0.5) * float64(n)) / 64)
		}
		got := make([]float32, 64)
		box1DSampled(in, win, at[:], got)
		for j, c := range at {
			if got[j] != full[c] {
				t.Fatalf("n=%d column %d: sampled %g, full %g", n, c, got[j], full[c])
			}
		}
	}
}

// TestPDQVectorsMatchShared checks that the copy in testdata is the shared
// reference set (../../../shared/testdata/pdq, beside the repository in CI
// and on developer machines); it skips where shared/ is absent.
func TestPDQVectorsMatchShared(t *testing.T) {
	t.Parallel()
	shared := filepath.Join("..", "..", "..", "shared", "testdata", "pdq")
	want, err := os.ReadFile(filepath.Join(shared, "expected.tsv"))
	if os.IsNotExist(err) {
		t.Skip("shared/testdata/pdq not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	got := readTestdata(t, "pdq/expected.tsv")
	if !bytes.Equal(got, want) {
		t.Fatal("testdata/pdq/expected.tsv differs from shared/testdata/pdq/expected.tsv: copy it again")
	}
	for _, v := range readPDQVectors(t) {
		a := readTestdata(t, filepath.Join("pdq", v.file))
		b, err := os.ReadFile(filepath.Join(shared, v.file))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from the shared copy (%v)", v.file, err)
		}
	}
}

func TestUnpremulMatchesNRGBAModel(t *testing.T) {
	t.Parallel()
	for a := range 256 {
		for c := range 256 {
			want := color.NRGBAModel.Convert(color.RGBA{R: uint8(c), A: uint8(a)}).(color.NRGBA).R
			if a == 255 {
				continue // the fast path takes opaque pixels as they are
			}
			if got := unpremul(uint8(c), uint8(a)); got != want {
				t.Fatalf("unpremul(%d, %d) = %d, NRGBAModel %d", c, a, got, want)
			}
		}
	}
}

// refBox1D is the reference's box filter written plainly (strided, float32
// division), to check the streaming, reciprocal-multiplying version.
func refBox1D(in, out []float32, n, stride, win int) {
	half := (win + 2) / 2
	var sum float32
	li, ri, oi, cur := 0, 0, 0, 0
	for range half - 1 {
		sum += in[ri]
		cur++
		ri += stride
	}
	for range win - half + 1 {
		sum += in[ri]
		cur++
		out[oi] = sum / float32(cur)
		ri += stride
		oi += stride
	}
	for range n - win {
		sum += in[ri]
		sum -= in[li]
		out[oi] = sum / float32(cur)
		li += stride
		ri += stride
		oi += stride
	}
	for range half - 1 {
		sum -= in[li]
		cur--
		out[oi] = sum / float32(cur)
		li += stride
		oi += stride
	}
}

// refDownsample is the reference's two-buffer blur and decimation.
func refDownsample(luma []float32, rows, cols int) [64 * 64]float32 {
	var out [64 * 64]float32
	b1 := slices.Clone(luma)
	b2 := make([]float32, len(luma))
	wr, wc := jaroszWindow(cols, 64), jaroszWindow(rows, 64)
	for range 2 {
		for i := range rows {
			refBox1D(b1[i*cols:], b2[i*cols:], cols, 1, wr)
		}
		for j := range cols {
			refBox1D(b2[j:], b1[j:], rows, cols, wc)
		}
	}
	for i := range 64 {
		ini := int(((float64(i) + 0.5) * float64(rows)) / 64)
		for j := range 64 {
			inj := int(((float64(j) + 0.5) * float64(cols)) / 64)
			out[i*64+j] = b1[ini*cols+inj]
		}
	}
	return out
}

func TestDownsampleMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sz := range [][2]int{{5, 5}, {5, 3000}, {3000, 5}, {63, 64}, {64, 63}, {65, 65}, {100, 37}, {128, 129}, {257, 300}, {700, 511}} {
		rows, cols := sz[0], sz[1]
		luma := make([]float32, rows*cols)
		for i := range luma {
			luma[i] = luma8(uint8(rng.IntN(256)), uint8(rng.IntN(256)), uint8(rng.IntN(256)))
		}
		want := refDownsample(luma, rows, cols)
		var got [64 * 64]float32
		downsample(func(y int, dst []float32) { copy(dst, luma[y*cols:][:cols]) }, rows, cols, &got)
		if got != want {
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%dx%d: first difference at %d: %g != %g", rows, cols, i, got[i], want[i])
					break
				}
			}
		}
	}
}
