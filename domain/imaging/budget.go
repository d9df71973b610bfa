package imaging

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"image"
	"image/color"
	"runtime"
	"sync"
)

// DefaultDecodeBudget is the default Budget size: 1 GiB of decoded pixel buffers, five
// 50 MP RGBA images at once.
const DefaultDecodeBudget = 1 << 30

// Budget bounds the memory of the decoded images of the whole process. A decode
// reserves its image's decoded size, as estimated from the header, before the pixel
// buffer is allocated; decodes that would pass the budget wait, first come first
// served, rather than exceed it.
//
// A reservation lasts as long as the pixels take memory, not only while they are
// used: a released image is garbage the collector frees only at its next cycle, and
// a server that collects rarely (a high GOGC) would otherwise hold several budgets
// of released pixels. Released bytes therefore stay counted until a collection is
// known to have freed them; when a decode waits and released bytes are pending, the
// budget runs one (runtime.GC, which returns once the cycle has swept), then lets in
// what fits. Pixel buffers hold no pointers, so the collection marks only the rest
// of the heap and costs milliseconds.
//
// The size is in bytes of decoded pixel buffers, not pixels: a 50 MP image is 200 MB
// as RGBA and 50 MB as a palette, and bytes are what exhaust memory. The estimate
// includes the decoders' own buffers that grow with the image (the coefficients of a
// progressive JPEG, the passes of an interlaced PNG) and the rows PDQ keeps while it
// hashes the image, and errs on the large side.
// A *Budget is safe for concurrent use; a nil *Budget bounds nothing.
type Budget struct {
	size    int64
	collect func() // runtime.GC; tests count the collections

	mu         sync.Mutex
	held       int64     // reserved by images in use
	released   int64     // released, possibly not yet freed by a collection
	peak       int64     // most of held+released ever at once
	waiters    list.List // of *budgetWaiter, first come first served
	collecting bool      // a collection is running for the waiters
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when n is reserved for the waiter
}

// NewBudget returns a budget of size bytes; size <= 0 means DefaultDecodeBudget.
func NewBudget(size int64) *Budget {
	if size <= 0 {
		size = DefaultDecodeBudget
	}
	return &Budget{size: size, collect: runtime.GC}
}

// Size returns the budget in bytes.
func (b *Budget) Size() int64 { return b.size }

// Held returns the bytes reserved by decoded images not yet released.
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// Reservation returns the bytes Decode reserves for data: its decoded size and the
// working memory of hashing it. Errors are DecodeConfig's.
func Reservation(data []byte, lim Limits) (int64, error) {
	cfg, f, err := DecodeConfig(data, lim)
	if err != nil {
		return 0, err
	}
	return reservedBytes(cfg, f, data), nil
}

func reservedBytes(cfg image.Config, f Format, data []byte) int64 {
	return decodedBytes(cfg, f, data) + hashBytes(cfg.Width, cfg.Height)
}

// Decode is the package's Decode within the budget: it checks the header, waits until
// the image's decoded size fits in the budget, then decodes. On success the caller must
// call release once it no longer uses the image's pixels, and keep no reference to
// them; release may be called more than once. On error nothing stays reserved. Errors
// are *Error, or ctx.Err() when the context ends while waiting: ctx's deadline bounds
// the wait. An image whose decoded size is larger than the whole budget fails at once
// with a TooLarge *Error: waiting could never end.
func (b *Budget) Decode(ctx context.Context, data []byte, lim Limits) (img image.Image, f Format, release func(), err error) {
	if b == nil {
		img, f, err = Decode(data, lim)
		return img, f, func() {}, err
	}
	cfg, f, err := DecodeConfig(data, lim)
	if err != nil {
		return nil, f, nil, err
	}
	n := reservedBytes(cfg, f, data)
	if n > b.size {
		e := invalid(f, fmt.Sprintf("image is %dx%d and takes about %d bytes to decode, more than the server's image decode budget of %d bytes",
			cfg.Width, cfg.Height, n, b.size), nil)
		e.TooLarge = true
		return nil, f, nil, e
	}
	if err := b.reserve(ctx, n); err != nil {
		return nil, f, nil, err
	}
	var once sync.Once
	release = func() { once.Do(func() { b.release(n) }) }
	img, f, err = Decode(data, lim)
	if err != nil {
		// The decoder may have allocated part of the image before failing.
		release()
		return nil, f, nil, err
	}
	return img, f, release, nil
}

// reserve waits until n more bytes fit in the budget, or ctx ends.
func (b *Budget) reserve(ctx context.Context, n int64) error {
	b.mu.Lock()
	if b.waiters.Len() == 0 && b.fits(n) {
		b.take(n)
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.waiters.PushBack(w)
	b.startCollection()
	b.mu.Unlock()

	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready:
		// Granted as the context ended: nothing was allocated, so the bytes
		// are free at once.
		b.held -= n
	default:
		b.waiters.Remove(elem)
	}
	// Whoever waited behind this waiter may fit now.
	b.grant()
	return ctx.Err()
}

// release turns n held bytes into released ones, which count until a collection.
func (b *Budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= n
	b.released += n
	b.startCollection()
}

func (b *Budget) fits(n int64) bool { return b.held+b.released+n <= b.size }

func (b *Budget) take(n int64) {
	b.held += n
	b.peak = max(b.peak, b.held+b.released)
}

// grant reserves for the waiters in order, as long as the first fits.
func (b *Budget) grant() {
	for e := b.waiters.Front(); e != nil; e = b.waiters.Front() {
		w := e.Value.(*budgetWaiter)
		if !b.fits(w.n) {
			return
		}
		b.take(w.n)
		b.waiters.Remove(e)
		close(w.ready)
	}
}

// startCollection starts a collection when a waiter does not fit and released bytes
// could make room; with nothing released the waiters wait for a release, which calls
// it again.
func (b *Budget) startCollection() {
	if b.collecting || b.released == 0 || b.waiters.Len() == 0 {
		return
	}
	b.collecting = true
	go b.collectForWaiters()
}

// collectForWaiters runs collections until the waiters fit or nothing released is
// left to free. Bytes released before a collection starts are free once it returns:
// the caller dropped its references before releasing.
func (b *Budget) collectForWaiters() {
	for {
		b.mu.Lock()
		freeing := b.released
		b.mu.Unlock()
		b.collect()
		b.mu.Lock()
		b.released -= freeing
		b.grant()
		if b.released == 0 || b.waiters.Len() == 0 {
			b.collecting = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
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

// hashBytes is the working memory of PDQ on a w x h image: a luminance row, the
// column sums, and the rows the first column pass of its blur keeps (the window
// is one 128th of the image's height), the same for the 64 sampled columns, and
// 64 KiB for the 64x64 buffers and the DCT. It is small for a usual image (2 MB
// for 50 MP) but not for a wide one: a 10,000,000 x 5 image keeps 160 MB of rows.
func hashBytes(w, h int) int64 {
	win := int64(jaroszWindow(h, 64))
	return 4*int64(w)*(win+3) + 4*64*(win+3) + 64<<10
}
