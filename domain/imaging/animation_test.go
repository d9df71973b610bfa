package imaging

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"slices"
	"testing"
)

var (
	red         = color.RGBA{255, 0, 0, 255}
	white       = color.RGBA{255, 255, 255, 255}
	black       = color.RGBA{0, 0, 0, 255}
	transparent = color.RGBA{}
	testPalette = color.Palette{red, white, black, transparent}
)

// animFrame is a frame of a test animation: rect filled with c.
type animFrame struct {
	rect     image.Rectangle
	c        color.Color
	delayCs  int
	disposal byte
}

// encodeAnimation encodes frames as a w x h GIF; index 3 of the palette is
// transparent in every frame.
func encodeAnimation(t testing.TB, w, h int, frames []animFrame) []byte {
	t.Helper()
	g := &gif.GIF{Config: image.Config{Width: w, Height: h, ColorModel: testPalette}, BackgroundIndex: 3}
	for _, f := range frames {
		p := image.NewPaletted(f.rect, testPalette)
		idx := uint8(testPalette.Index(f.c))
		for i := range p.Pix {
			p.Pix[i] = idx
		}
		g.Image = append(g.Image, p)
		g.Delay = append(g.Delay, f.delayCs)
		g.Disposal = append(g.Disposal, f.disposal)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type visited struct {
	index      int
	start, end int64
	pix        []color.RGBA // row-major copy of the canvas
}

func walkAnimation(t *testing.T, b *Budget, data []byte, lim Limits, limit int) ([]visited, error) {
	t.Helper()
	var out []visited
	err := b.AnimationFrames(context.Background(), data, lim, limit, func(f AnimationFrame) error {
		r := f.Image.Bounds()
		v := visited{index: f.Index, start: f.StartMs, end: f.EndMs}
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				v.pix = append(v.pix, color.RGBAModel.Convert(f.Image.At(x, y)).(color.RGBA))
			}
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

// canvas16 is a 16x16 canvas: base, with each rect painted its colour in
// order.
func canvas16(base color.RGBA, paint ...any) []color.RGBA {
	pix := slices.Repeat([]color.RGBA{base}, 256)
	for i := 0; i < len(paint); i += 2 {
		r, c := paint[i].(image.Rectangle), paint[i+1].(color.RGBA)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				pix[y*16+x] = c
			}
		}
	}
	return pix
}

// Each frame is shown as a viewer draws it: over what the earlier frames
// left, after their disposal (none, restore to background, restore to
// previous), at the times its delay gives (0 or 1 hundredths is 100 ms).
func TestAnimationFramesAreDrawnAsShown(t *testing.T) {
	t.Parallel()
	tl, br, bl := image.Rect(0, 0, 8, 8), image.Rect(8, 8, 16, 16), image.Rect(0, 8, 8, 16)
	dot := image.Rect(15, 0, 16, 1)
	data := encodeAnimation(t, 16, 16, []animFrame{
		{image.Rect(0, 0, 16, 16), red, 10, 1},
		{tl, white, 0, 1},
		{br, black, 25, 2},
		{bl, white, 5, 3},
		{dot, black, 1, 0},
	})
	got, err := walkAnimation(t, NewBudget(0), data, Limits{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []visited{
		{1, 100, 200, canvas16(red, tl, white)},
		{2, 200, 450, canvas16(red, tl, white, br, black)},
		{3, 450, 500, canvas16(red, tl, white, br, transparent, bl, white)},
		{4, 500, 600, canvas16(red, tl, white, br, transparent, dot, black)},
	}
	if len(got) != len(want) {
		t.Fatalf("visited %d frames, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.index != w.index || g.start != w.start || g.end != w.end {
			t.Errorf("frame %d: index %d, %d-%d ms; want %d, %d-%d ms", i, g.index, g.start, g.end, w.index, w.start, w.end)
		}
		for p := range w.pix {
			if g.pix[p] != w.pix[p] {
				t.Errorf("frame %d: pixel (%d,%d) is %v, want %v", w.index, p%16, p/16, g.pix[p], w.pix[p])
				break
			}
		}
	}
}

// A long animation is sampled at instants spread evenly over its running
// time, not its first frames.
func TestAnimationSample(t *testing.T) {
	t.Parallel()
	l := &gifLayout{}
	for range 100 {
		l.frames = append(l.frames, gifFrame{delayMs: 100})
	}
	if got, want := l.sample(4), []int{12, 37, 62, 87}; !slices.Equal(got, want) {
		t.Errorf("sample(4) of 100 equal frames = %v, want %v", got, want)
	}
	// A frame shown 9.9 s of 10 s is the one seen.
	l.frames = []gifFrame{{delayMs: 50}, {delayMs: 9900}, {delayMs: 50}}
	if got, want := l.sample(8), []int{1}; !slices.Equal(got, want) {
		t.Errorf("sample(8) = %v, want %v", got, want)
	}
	if got := l.sample(100); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("sample(100) = %v, want [1 2]", got)
	}
}

// What an animation may cost is bounded before a frame is decoded: its
// frames, their pixels together, and its canvas against the decode budget.
// A still GIF, or another format, visits nothing.
func TestAnimationFramesLimits(t *testing.T) {
	t.Parallel()
	full := image.Rect(0, 0, 16, 16)
	three := encodeAnimation(t, 16, 16, []animFrame{{full, red, 10, 0}, {full, white, 10, 0}, {full, black, 10, 0}})
	dots := []animFrame{{full, red, 10, 0}}
	for range 4 {
		dots = append(dots, animFrame{image.Rect(0, 0, 1, 1), white, 10, 3})
	}
	var many []animFrame
	for range MaxAnimationFrames + 1 {
		many = append(many, animFrame{image.Rect(0, 0, 1, 1), red, 10, 0})
	}
	for _, c := range []struct {
		name    string
		data    []byte
		lim     Limits
		budget  *Budget
		visits  int
		tooMuch bool
	}{
		{"within limits", three, Limits{}, NewBudget(0), 2, false},
		{"no budget", three, Limits{}, nil, 2, false},
		{"tiny frames on a large canvas", encodeAnimation(t, 16, 16, dots), Limits{}, NewBudget(0), 4, false},
		{"hashing bounded by the canvas", encodeAnimation(t, 16, 16, dots), Limits{MaxPixels: 300}, NewBudget(0), 2, false},
		{"frames' pixels past the limit", three, Limits{MaxPixels: 700}, NewBudget(0), 0, true},
		{"too many frames", encodeAnimation(t, 1, 1, many), Limits{}, NewBudget(0), 0, true},
		{"canvas past the budget", three, Limits{}, NewBudget(1000), 0, true},
		{"a still GIF", encodeAnimation(t, 16, 16, []animFrame{{full, red, 10, 0}}), Limits{}, NewBudget(0), 0, false},
		{"a PNG", testPNG(t), Limits{}, NewBudget(0), 0, false},
		{"truncated in the third frame", three[:len(three)-8], Limits{}, NewBudget(0), 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := walkAnimation(t, c.budget, c.data, c.lim, 10)
			var ie *Error
			if c.tooMuch != (errors.As(err, &ie) && ie.TooLarge) {
				t.Fatalf("error %v, want a TooLarge *Error: %v", err, c.tooMuch)
			}
			if !c.tooMuch && err != nil {
				t.Fatal(err)
			}
			if len(got) != c.visits {
				t.Errorf("visited %d frames, want %d", len(got), c.visits)
			}
			if c.budget != nil && c.budget.Held() != 0 {
				t.Errorf("%d bytes still held", c.budget.Held())
			}
		})
	}
}

func testPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewRGBA(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzAnimationFrames: any bytes, never a panic; at most the asked frames,
// in order, in time order, within the canvas.
func FuzzAnimationFrames(f *testing.F) {
	full := image.Rect(0, 0, 16, 16)
	f.Add(encodeAnimation(f, 16, 16, []animFrame{{full, red, 10, 1}, {image.Rect(2, 2, 9, 9), white, 0, 2}, {image.Rect(4, 0, 16, 3), black, 3, 3}}))
	f.Add(encodeAnimation(f, 4, 4, []animFrame{{image.Rect(0, 0, 4, 4), red, 0, 0}, {image.Rect(1, 1, 2, 2), transparent, 0, 0}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		lastIndex, lastEnd := 0, int64(0)
		n := 0
		err := NewBudget(64<<20).AnimationFrames(context.Background(), data, Limits{MaxPixels: 1 << 20}, 4, func(fr AnimationFrame) error {
			n++
			if fr.Index <= lastIndex || fr.StartMs < lastEnd || fr.EndMs <= fr.StartMs {
				t.Fatalf("frame %d at %d-%d ms after frame %d ending at %d", fr.Index, fr.StartMs, fr.EndMs, lastIndex, lastEnd)
			}
			lastIndex, lastEnd = fr.Index, fr.EndMs
			if px := int64(fr.Image.Bounds().Dx()) * int64(fr.Image.Bounds().Dy()); px > 1<<20 {
				t.Fatalf("a canvas of %d pixels", px)
			}
			return nil
		})
		var ie *Error
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("error %v is not an *Error", err)
		}
		if n > 4 {
			t.Fatalf("%d frames visited, at most 4 asked", n)
		}
	})
}

// BenchmarkAnimationFramesAtTheLimits is the most an animation within the
// limits costs: 5,000 frames of 100x100 (50 MP in all), each drawn and
// restored, 32 of them hashed.
func BenchmarkAnimationFramesAtTheLimits(b *testing.B) {
	frames := []animFrame{{image.Rect(0, 0, 100, 100), red, 2, 0}}
	for i := range MaxAnimationFrames - 1 {
		frames = append(frames, animFrame{image.Rect(0, 0, 100, 100), []color.Color{white, black}[i%2], 2, 3})
	}
	data := encodeAnimation(b, 100, 100, frames)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		err := NewBudget(0).AnimationFrames(context.Background(), data, Limits{}, 32, func(f AnimationFrame) error {
			PDQ(f.Image)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
