package imaging

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/gif"
	"sync"
)

// MaxAnimationFrames bounds the frames of an animated GIF: each costs a
// decoder of its own however small it is, so a file of a hundred thousand
// one-pixel frames would cost seconds of CPU for nothing a viewer sees.
const MaxAnimationFrames = 5000

// AnimationFrame is one frame of an animation as a viewer sees it: the
// canvas after the frame is drawn over what the earlier frames left, and
// the time it is shown.
type AnimationFrame struct {
	// Image is the whole canvas. It is reused for the next frame once the
	// visit returns: a visit must not keep it.
	Image          image.Image
	Index          int // of the frame in the file, from 0
	StartMs, EndMs int64
}

// gifFrame is where one frame of a GIF lies in the file: its graphic
// control extension (if it has one) and its image descriptor up to the end
// of its pixel data.
type gifFrame struct {
	control  []byte // the extension block, or nil
	image    []byte // descriptor, local palette and LZW sub-blocks
	rect     image.Rectangle
	delayMs  int64
	disposal byte
}

// gifLayout is a GIF's screen and frames, read from its block structure
// without decoding a pixel.
type gifLayout struct {
	head   []byte // header, logical screen descriptor and global palette
	width  int
	height int
	frames []gifFrame
}

var (
	errGIFLayout     = errors.New("gif: malformed block structure")
	errTooManyFrames = errors.New("gif: too many frames")
)

// scanGIF reads the layout of a GIF. It stops at the trailer, or at the
// first malformed block (a viewer shows the frames before it, and the
// first frame has already been decoded whole by then): the frames read so
// far are kept. More than MaxAnimationFrames frames is an error.
func scanGIF(data []byte) (*gifLayout, error) {
	if len(data) < 13 || !bytes.HasPrefix(data, []byte("GIF8")) {
		return nil, errGIFLayout
	}
	l := &gifLayout{width: int(le16(data[6:])), height: int(le16(data[8:]))}
	p := 13
	if data[10]&0x80 != 0 {
		p += 3 << (data[10]&7 + 1)
	}
	if p > len(data) {
		return nil, errGIFLayout
	}
	l.head = data[:p]
	var control []byte
	for p < len(data) {
		switch data[p] {
		case 0x3b: // trailer
			return l, nil
		case 0x21: // extension: label, then sub-blocks
			if p+2 > len(data) {
				return l, nil
			}
			end, ok := skipSubBlocks(data, p+2)
			if !ok {
				return l, nil
			}
			if data[p+1] == 0xf9 && end-p >= 8 && data[p+2] == 4 {
				control = data[p:end]
			}
			p = end
		case 0x2c: // image descriptor
			if p+10 > len(data) {
				return l, nil
			}
			d := data[p:]
			x, y := int(le16(d[1:])), int(le16(d[3:]))
			w, h := int(le16(d[5:])), int(le16(d[7:]))
			q := p + 10
			if d[9]&0x80 != 0 {
				q += 3 << (d[9]&7 + 1)
			}
			q++ // LZW minimum code size
			if q > len(data) {
				return l, nil
			}
			end, ok := skipSubBlocks(data, q)
			if !ok {
				return l, nil
			}
			if len(l.frames) == MaxAnimationFrames {
				return nil, errTooManyFrames
			}
			f := gifFrame{control: control, image: data[p:end], rect: image.Rect(x, y, x+w, y+h), delayMs: 100}
			if control != nil {
				f.disposal = control[3] >> 2 & 7
				// Browsers show a delay of 0 or 1 hundredths as 100 ms.
				if cs := int64(le16(control[4:])); cs > 1 {
					f.delayMs = cs * 10
				}
			}
			l.frames = append(l.frames, f)
			control = nil
			p = end
		default:
			return l, nil
		}
	}
	return l, nil
}

// skipSubBlocks returns the offset after the sub-blocks starting at p and
// their terminator.
func skipSubBlocks(data []byte, p int) (int, bool) {
	for p < len(data) {
		n := int(data[p])
		p += 1 + n
		if n == 0 {
			return p, true
		}
	}
	return 0, false
}

func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }

// animationPixels is the sum of the frames' areas: what decoding every
// frame costs.
func (l *gifLayout) animationPixels() int64 {
	var n int64
	for _, f := range l.frames {
		n += int64(f.rect.Dx()) * int64(f.rect.Dy())
	}
	return n
}

// sample returns the indexes of at most n frames shown at n instants
// spread evenly over the animation's running time, in order; a frame
// shown longer is more likely to be taken, as it is more likely to be
// seen. The first frame is left out: the caller has it already.
func (l *gifLayout) sample(n int) []int {
	var total int64
	for _, f := range l.frames {
		total += f.delayMs
	}
	var out []int
	i, start := 0, int64(0)
	for k := range n {
		t := (2*int64(k) + 1) * total / (2 * int64(n))
		for i < len(l.frames)-1 && start+l.frames[i].delayMs <= t {
			start += l.frames[i].delayMs
			i++
		}
		if i > 0 && (len(out) == 0 || out[len(out)-1] != i) {
			out = append(out, i)
		}
	}
	return out
}

// AnimationFrames visits up to limit frames of an animated GIF other than
// its first (which Decode gives), drawn as a viewer shows them and sampled
// evenly over the animation's running time. A still image, or any format
// but GIF, visits nothing. Every frame up to the last sampled one is
// decoded, one at a time: the memory is a canvas, the rectangle of it a
// frame disposed to the previous state restores, and one frame, reserved
// in the budget before the first decode. The frames together may not pass
// lim.MaxPixels (decoding them is the CPU an animation costs), nor their
// number MaxAnimationFrames: such an animation is a TooLarge *Error; and
// the frames visited together at most twice lim.MaxPixels of canvas. A
// frame that does not decode ends the walk without an error, as a viewer
// stops there. An error of visit ends the walk and is returned.
func (b *Budget) AnimationFrames(ctx context.Context, data []byte, lim Limits, limit int, visit func(AnimationFrame) error) error {
	lim = lim.withDefaults()
	if Sniff(data) != FormatGIF || limit <= 0 {
		return nil
	}
	l, err := scanGIF(data)
	if errors.Is(err, errTooManyFrames) {
		e := invalid(FormatGIF, fmt.Sprintf("animated GIF has more than %d frames", MaxAnimationFrames), err)
		e.TooLarge = true
		return e
	}
	if err != nil {
		return nil // Decode has judged the file already
	}
	if len(l.frames) < 2 || l.width <= 0 || l.height <= 0 {
		return nil
	}
	if px := l.animationPixels(); px > lim.MaxPixels {
		e := invalid(FormatGIF, fmt.Sprintf("animated GIF has %d frames of %d pixels in all, more than the %d pixel limit", len(l.frames), px, lim.MaxPixels), nil)
		e.TooLarge = true
		return e
	}
	if int64(l.width)*int64(l.height) > lim.MaxPixels {
		return checkDims(FormatGIF, l.width, l.height, lim)
	}
	// Hashing a frame reads the whole canvas: a large canvas of tiny frames
	// would otherwise cost limit full-size hashes for a few bytes of file.
	limit = int(min(int64(limit), max(1, 2*lim.MaxPixels/(int64(l.width)*int64(l.height)))))
	picks := l.sample(limit)
	if len(picks) == 0 {
		return nil
	}
	release, err := b.reserveAnimation(ctx, l)
	if err != nil {
		return err
	}
	defer release()
	return l.walk(ctx, picks, visit)
}

// reserveAnimation reserves what AnimationFrames holds at once.
func (b *Budget) reserveAnimation(ctx context.Context, l *gifLayout) (func(), error) {
	if b == nil {
		return func() {}, nil
	}
	px := int64(l.width) * int64(l.height)
	var largest int64
	for _, f := range l.frames {
		largest = max(largest, int64(f.rect.Dx())*int64(f.rect.Dy()))
	}
	// The canvas, the part of it a restore-to-previous frame covers, and
	// the frame itself (a palette index a pixel).
	n := 4*px + 5*largest + hashBytes(l.width, l.height)
	if n > b.size {
		e := invalid(FormatGIF, fmt.Sprintf("animated GIF is %dx%d and takes about %d bytes to draw, more than the server's image decode budget of %d bytes",
			l.width, l.height, n, b.size), nil)
		e.TooLarge = true
		return nil, e
	}
	if err := b.reserve(ctx, n); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { b.release(n) }) }, nil
}

// walk draws the frames in order up to the last of picks, visiting those
// picked, until ctx ends. At the limits (5,000 frames of 50 MP in all) it
// costs about a second of CPU, as decoding a 50 MP still image does
// (BenchmarkAnimationFramesAtTheLimits).
func (l *gifLayout) walk(ctx context.Context, picks []int, visit func(AnimationFrame) error) error {
	screen := image.Rect(0, 0, l.width, l.height)
	canvas := image.NewRGBA(screen)
	// A frame disposed to the previous state changes only its own
	// rectangle, so that is all that is kept: a copy of the whole canvas
	// for each of thousands of one-pixel frames would cost more than
	// decoding them.
	var previous *image.RGBA
	var start int64
	one := make([]byte, 0, len(l.head)+64)
	next := 0
	for i, f := range l.frames {
		if next == len(picks) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		one = append(append(append(append(one[:0], l.head...), f.control...), f.image...), 0x3b)
		frame, err := decodeFrame(one)
		if err != nil {
			return nil // a viewer stops at a frame it cannot read
		}
		covered := f.rect.Intersect(screen)
		if f.disposal == 3 {
			previous = saveRect(previous, canvas, covered)
		}
		draw.Draw(canvas, covered, frame, covered.Min, draw.Over)
		if i == picks[next] {
			next++
			if err := visit(AnimationFrame{Image: canvas, Index: i, StartMs: start, EndMs: start + f.delayMs}); err != nil {
				return err
			}
		}
		start += f.delayMs
		switch f.disposal {
		case 2: // restore to background: browsers clear to transparent
			draw.Draw(canvas, covered, image.Transparent, image.Point{}, draw.Src)
		case 3:
			draw.Draw(canvas, covered, previous, covered.Min, draw.Src)
		}
	}
	return nil
}

// saveRect copies r of canvas into buf (reallocated only when too small)
// and returns it with r as its bounds.
func saveRect(buf, canvas *image.RGBA, r image.Rectangle) *image.RGBA {
	n := 4 * r.Dx() * r.Dy()
	if buf == nil || cap(buf.Pix) < n {
		buf = &image.RGBA{Pix: make([]byte, n)}
	}
	buf.Pix, buf.Stride, buf.Rect = buf.Pix[:n], 4*r.Dx(), r
	draw.Draw(buf, r, canvas, r.Min, draw.Src)
	return buf
}

// decodeFrame decodes a one-frame GIF, recovering from a decoder panic as
// Decode does.
func decodeFrame(one []byte) (image.Image, error) {
	var img image.Image
	err := guard(func() error {
		var err error
		img, err = gif.Decode(bytes.NewReader(one))
		return err
	})
	return img, err
}
