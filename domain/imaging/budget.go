package imaging

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultDecodeBudget is the default Budget size: 1 GiB of decoded pixel buffers, five
// 50 MP RGBA images at once (DESIGN §15).
const DefaultDecodeBudget = 1 << 30

// Budget bounds the memory of the decoded images of the whole process. A decode
// reserves its image's decoded size, as estimated from the header, before the pixel
// buffer is allocated, and holds it until the caller releases the image; decodes that
// would pass the budget wait, first come first served, rather than exceed it.
//
// The size is in bytes of decoded pixel buffers, not pixels: a 50 MP image is 200 MB
// as RGBA and 50 MB as a palette, and bytes are what exhaust memory. The estimate
// includes the decoders' own buffers that grow with the image (the coefficients of a
// progressive JPEG, the passes of an interlaced PNG) and errs on the large side.
// A *Budget is safe for concurrent use; a nil *Budget bounds nothing.
type Budget struct {
	size int64
	sem  *semaphore.Weighted

	held atomic.Int64 // bytes reserved now
	peak atomic.Int64 // most bytes ever reserved at once
}

// NewBudget returns a budget of size bytes; size <= 0 means DefaultDecodeBudget.
func NewBudget(size int64) *Budget {
	if size <= 0 {
		size = DefaultDecodeBudget
	}
	return &Budget{size: size, sem: semaphore.NewWeighted(size)}
}

// Size returns the budget in bytes.
func (b *Budget) Size() int64 { return b.size }

// Held returns the bytes reserved by decoded images not yet released.
func (b *Budget) Held() int64 { return b.held.Load() }

// Decode is the package's Decode within the budget: it checks the header, waits until
// the image's decoded size fits in the budget, then decodes. On success the caller must
// call release once it no longer uses the image's pixels; release may be called more
// than once. On error nothing stays reserved. Errors are *Error, or ctx.Err() when the
// context ends while waiting. An image whose decoded size is larger than the whole
// budget fails at once with a TooLarge *Error: waiting could never end.
func (b *Budget) Decode(ctx context.Context, data []byte, lim Limits) (img image.Image, f Format, release func(), err error) {
	if b == nil {
		img, f, err = Decode(data, lim)
		return img, f, func() {}, err
	}
	cfg, f, err := DecodeConfig(data, lim)
	if err != nil {
		return nil, f, nil, err
	}
	n := decodedBytes(cfg, f, data)
	if n > b.size {
		e := invalid(f, fmt.Sprintf("image is %dx%d and takes about %d bytes to decode, more than the server's image decode budget of %d bytes",
			cfg.Width, cfg.Height, n, b.size), nil)
		e.TooLarge = true
		return nil, f, nil, e
	}
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, f, nil, err
	}
	for h := b.held.Add(n); ; {
		if p := b.peak.Load(); h <= p || b.peak.CompareAndSwap(p, h) {
			break
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			b.held.Add(-n)
			b.sem.Release(n)
		})
	}
	img, f, err = Decode(data, lim)
	if err != nil {
		release()
		return nil, f, nil, err
	}
	return img, f, release, nil
}

// decodedBytes estimates the memory a decoder allocates for an image from its header:
// the pixel buffer its color model implies plus the decoder's own buffers that grow
// with the image. Unknown models count 8 bytes a pixel, the widest.
func decodedBytes(cfg image.Config, f Format, data []byte) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	var per, comps int64 // bytes a pixel in the image; color components a pixel
	switch m := cfg.ColorModel; m {
	case color.GrayModel, color.AlphaModel:
		per, comps = 1, 1
	case color.Gray16Model, color.Alpha16Model:
		per, comps = 2, 1
	case color.YCbCrModel:
		per, comps = 3, 3 // 4:4:4; subsampled JPEG and WebP take less
	case color.NYCbCrAModel:
		per, comps = 4, 4
	case color.RGBAModel, color.NRGBAModel:
		per, comps = 4, 4
	case color.CMYKModel:
		// A CMYK JPEG is decoded as YCbCr plus a black plane, then converted.
		per, comps = 8, 4
	default:
		if _, ok := m.(color.Palette); ok {
			per, comps = 1, 1
		} else {
			per, comps = 8, 4
		}
	}
	n := px * per
	switch f {
	case FormatJPEG:
		// A progressive JPEG keeps every DCT coefficient until its last scan: an
		// int32 for each sample of each component. Its SOF2 marker cannot occur in
		// entropy-coded data, where every FF byte is stuffed.
		if bytes.Contains(data, []byte{0xff, 0xc2}) {
			n += px * comps * 4
		}
	case FormatPNG:
		// Adam7 passes are decoded as images of their own, then merged.
		if len(data) > 28 && data[28] == 1 {
			n += px * per
		}
	case FormatTIFF:
		// The decompressed strips are held beside the image built from them.
		n += px * per
	case FormatWebP:
		// Lossless WebP decodes to ARGB words, then copies them to NRGBA.
		if per == 4 {
			n += px * per
		}
	}
	return n
}
