package imaging

import (
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"math"
	"math/bits"
	"slices"
)

// Hash is a 256-bit PDQ hash. Byte 0 is the most significant byte of the
// 64-digit hex form the reference implementation prints, so String and
// ParseHash round-trip with ThreatExchange and Hasher-Matcher-Actioner
// hash lists. Bit k of the hash (k = 16*row + column of the 16x16 DCT
// block) is bit k%8 of byte 31-k/8.
type Hash [32]byte

// String returns the 64-digit lowercase hex form.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Distance returns the Hamming distance between two hashes (0..256).
func (h Hash) Distance(o Hash) int {
	a, b := h.words(), o.words()
	return bits.OnesCount64(a[0]^b[0]) + bits.OnesCount64(a[1]^b[1]) +
		bits.OnesCount64(a[2]^b[2]) + bits.OnesCount64(a[3]^b[3])
}

// IsZero reports whether all bits are clear, which is what PDQ returns for
// images too small to hash.
func (h Hash) IsZero() bool { return h == Hash{} }

func (h Hash) words() [4]uint64 {
	var w [4]uint64
	for i := range w {
		w[i] = uint64(h[8*i])<<56 | uint64(h[8*i+1])<<48 | uint64(h[8*i+2])<<40 | uint64(h[8*i+3])<<32 |
			uint64(h[8*i+4])<<24 | uint64(h[8*i+5])<<16 | uint64(h[8*i+6])<<8 | uint64(h[8*i+7])
	}
	return w
}

// ParseHash parses the 64-digit hex form (either case).
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 64 {
		return h, fmt.Errorf("pdq hash must be 64 hex digits, got %d characters", len(s))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return Hash{}, fmt.Errorf("pdq hash is not hex: %w", err)
	}
	return h, nil
}

// PDQ computes the PDQ hash and quality (0..100) of img, following Meta's
// published algorithm (ThreatExchange pdq, pdqhash-2017-10-09): luminance
// from 8-bit RGB, two passes of a Jarosz box filter sized to the image,
// decimation to 64x64, the 16x16 low-frequency block of a 2D DCT,
// thresholded at its median; quality from the sum of quantised gradients of
// the 64x64 image.
//
// Pixels are taken at full resolution with alpha dropped (not
// premultiplied) and without EXIF orientation, which is what
// python-threatexchange computes, so our hashes match lists produced by
// those tools. Images smaller than 5x5 hash to zero with quality 0, as in the
// reference. Arithmetic is float32 in the reference's order of operations,
// so results agree bit for bit with the reference's (all 35 reference
// vectors, including near-flat images whose hash is rounding noise).
func PDQ(img image.Image) (Hash, int) {
	b := img.Bounds()
	rows, cols := b.Dy(), b.Dx()
	if rows < minHashableDim || cols < minHashableDim {
		return Hash{}, 0
	}
	var buf64 [64 * 64]float32
	downsample(lumaRows(img), rows, cols, &buf64)
	quality := qualityMetric(&buf64)
	var dct [16 * 16]float32
	dct64To16(&buf64, &dct)
	return dctToHash(&dct), quality
}

const minHashableDim = 5

// Luma coefficients of the reference (float32, as there).
const (
	lumaR float32 = 0.299
	lumaG float32 = 0.587
	lumaB float32 = 0.114
)

// lumaLUT holds coefficient*value for every 8-bit value; the products are the
// same float32 roundings the reference computes per pixel.
var lumaLUT = func() (t [3][256]float32) {
	for v := range 256 {
		t[0][v] = lumaR * float32(v)
		t[1][v] = lumaG * float32(v)
		t[2][v] = lumaB * float32(v)
	}
	return t
}()

func luma8(r, g, b uint8) float32 {
	// Sum in the reference's order: (R + G) + B.
	return float32(lumaLUT[0][r]+lumaLUT[1][g]) + lumaLUT[2][b]
}

// lumaRows returns a function writing the luminance of row y (0-based from
// the top of img's bounds) into dst. The common decoder outputs have fast
// paths; every path yields the same 8-bit RGB as color.NRGBAModel would,
// except NYCbCrA, whose alpha is dropped rather than premultiplied and
// divided out again.
func lumaRows(img image.Image) func(y int, dst []float32) {
	b := img.Bounds()
	cols := b.Dx()
	switch m := img.(type) {
	case *image.YCbCr:
		return lumaRowsYCbCr(m)
	case *image.NYCbCrA:
		return lumaRowsYCbCr(&m.YCbCr)
	case *image.Gray:
		return func(y int, dst []float32) {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:cols]
			for x, v := range row {
				dst[x] = luma8(v, v, v)
			}
		}
	case *image.NRGBA:
		return func(y int, dst []float32) {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:4*cols]
			for x := range dst[:cols] {
				p := row[4*x : 4*x+3 : 4*x+3]
				dst[x] = luma8(p[0], p[1], p[2])
			}
		}
	case *image.RGBA:
		// What the PNG decoder returns for opaque truecolor images.
		return func(y int, dst []float32) {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:4*cols]
			for x := range dst[:cols] {
				p := row[4*x : 4*x+4 : 4*x+4]
				if a := p[3]; a != 0xff {
					dst[x] = luma8(unpremul(p[0], a), unpremul(p[1], a), unpremul(p[2], a))
					continue
				}
				dst[x] = luma8(p[0], p[1], p[2])
			}
		}
	case *image.Gray16:
		// 16-bit greyscale PNGs; NRGBAModel keeps the high byte.
		return func(y int, dst []float32) {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:2*cols]
			for x := range dst[:cols] {
				v := row[2*x]
				dst[x] = luma8(v, v, v)
			}
		}
	case *image.Paletted:
		var pal [256]float32
		for i, c := range m.Palette {
			if i < len(pal) {
				n := color.NRGBAModel.Convert(c).(color.NRGBA)
				pal[i] = luma8(n.R, n.G, n.B)
			}
		}
		return func(y int, dst []float32) {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):][:cols]
			for x, v := range row {
				// The decoders reject indices past the palette; were one
				// to slip through it reads as black instead of panicking.
				dst[x] = pal[v]
			}
		}
	}
	return func(y int, dst []float32) {
		for x := range dst[:cols] {
			n := color.NRGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.NRGBA)
			dst[x] = luma8(n.R, n.G, n.B)
		}
	}
}

func lumaRowsYCbCr(m *image.YCbCr) func(y int, dst []float32) {
	b := m.Rect
	cols := b.Dx()
	var hShift, vShift uint
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
	case image.YCbCrSubsampleRatio422:
		hShift = 1
	case image.YCbCrSubsampleRatio420:
		hShift, vShift = 1, 1
	case image.YCbCrSubsampleRatio440:
		vShift = 1
	case image.YCbCrSubsampleRatio411:
		hShift = 2
	case image.YCbCrSubsampleRatio410:
		hShift, vShift = 2, 1
	default:
		hShift = 99 // unknown ratio: take the slow path below
	}
	if hShift == 99 || b.Min.X < 0 || b.Min.Y < 0 {
		// Shifts equal COffset's divisions only for non-negative
		// coordinates.
		return func(y int, dst []float32) {
			for x := range dst[:cols] {
				yi, ci := m.YOffset(b.Min.X+x, b.Min.Y+y), m.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				dst[x] = luma8(r, g, bb)
			}
		}
	}
	// This is color.YCbCrToRGB inlined, with the chroma terms computed once
	// per chroma sample instead of once per pixel: the conversion was
	// about a third of the hash time of a 1024x1024 JPEG.
	if hShift == 1 && b.Min.X%2 == 0 {
		// 4:2:0 and 4:2:2, the usual JPEG subsamplings: two pixels per
		// chroma sample, without per-pixel index arithmetic.
		return func(y int, dst []float32) {
			y += b.Min.Y
			yrow := m.Y[m.YOffset(b.Min.X, y):][:cols]
			c0 := ((y >> vShift) - (b.Min.Y >> vShift)) * m.CStride
			cw := (cols + 1) / 2
			cbRow, crRow := m.Cb[c0:][:cw], m.Cr[c0:][:cw]
			dst = dst[:cols]
			for cx, cbv := range cbRow {
				cb1 := int32(cbv) - 128
				cr1 := int32(crRow[cx]) - 128
				rc, gc, bc := 91881*cr1, -22554*cb1-46802*cr1, 116130*cb1
				x := 2 * cx
				yy1 := int32(yrow[x]) * 0x10101
				dst[x] = luma8(clamp16(yy1+rc), clamp16(yy1+gc), clamp16(yy1+bc))
				if x+1 < len(yrow) {
					yy1 = int32(yrow[x+1]) * 0x10101
					dst[x+1] = luma8(clamp16(yy1+rc), clamp16(yy1+gc), clamp16(yy1+bc))
				}
			}
		}
	}
	return func(y int, dst []float32) {
		y += b.Min.Y
		yrow := m.Y[m.YOffset(b.Min.X, y):][:cols]
		cbase := ((y>>vShift)-(b.Min.Y>>vShift))*m.CStride - (b.Min.X >> hShift)
		lastC := -1
		var rc, gc, bc int32
		for x, yv := range yrow {
			ci := cbase + ((b.Min.X + x) >> hShift)
			if ci != lastC {
				cb1 := int32(m.Cb[ci]) - 128
				cr1 := int32(m.Cr[ci]) - 128
				rc, gc, bc = 91881*cr1, -22554*cb1-46802*cr1, 116130*cb1
				lastC = ci
			}
			yy1 := int32(yv) * 0x10101
			dst[x] = luma8(clamp16(yy1+rc), clamp16(yy1+gc), clamp16(yy1+bc))
		}
	}
}

// unpremul undoes alpha premultiplication of an 8-bit channel exactly as
// color.NRGBAModel does (in 16 bits, then the high byte).
func unpremul(c, a uint8) uint8 {
	if a == 0 {
		return 0
	}
	return uint8((uint32(c) * 0x101 * 0xffff / (uint32(a) * 0x101)) >> 8)
}

// clamp16 is the rounding and clamping of color.YCbCrToRGB: v is a 16.16
// fixed-point value whose integer part must land in 0..255.
func clamp16(v int32) uint8 {
	if uint32(v)&0xff000000 == 0 {
		return uint8(v >> 16)
	}
	return uint8(^(v >> 31))
}

// downsample blurs the luminance of a rows x cols image with two passes of
// the Jarosz box filter and decimates it to 64x64, as the reference does.
//
// The reference materialises the whole image twice over as float32. Here
// everything streams, top to bottom: each luminance row is box-filtered
// along the row and pushed into the first column filter, which keeps only
// the last window+1 rows; each row it outputs is filtered along the row
// again, but only at the 64 columns the decimation reads (the running sum
// still visits every value), and pushed into the second column filter,
// which outputs only the 64 rows the decimation reads. Memory is a few rows
// whatever the image size (a 50 MP image: ~2 MB instead of 400 MB, and no
// rows x 64 strip, which a 5 x 10,000,000 image would make 2.5 GB), and a
// 1024x1024 image stays in cache. The order of additions along each row
// and column is the reference's, so the results are identical.
func downsample(lumaRow func(y int, dst []float32), rows, cols int, out *[64 * 64]float32) {
	if rows == 64 && cols == 64 {
		// The reference skips the blur when the input is already 64x64
		// (video frames scaled by ffmpeg).
		for y := range 64 {
			lumaRow(y, out[y*64:][:64])
		}
		return
	}
	winRows := jaroszWindow(cols, 64) // window along each row
	winCols := jaroszWindow(rows, 64) // window along each column
	var inj, ini [64]int
	for j := range inj {
		inj[j] = int(((float64(j) + 0.5) * float64(cols)) / 64)
		ini[j] = int(((float64(j) + 0.5) * float64(rows)) / 64)
	}

	// Second pass along columns: keep the sampled rows.
	k := 0
	pass2 := newColBox(winCols, 64, func(o int, sums []float32, inv float64) {
		for ; k < len(ini) && ini[k] == o; k++ {
			dst := out[k*64:][:64]
			for j, s := range sums[:64] {
				dst[j] = div(s, inv)
			}
		}
	})
	// First pass along columns, then the second along rows (sampled).
	line := make([]float32, cols)
	pass1 := newColBox(winCols, cols, func(_ int, sums []float32, inv float64) {
		sums = sums[:len(line)]
		for j, s := range sums {
			line[j] = div(s, inv)
		}
		box1DSampled(line, winRows, inj[:], pass2.next())
		pass2.push()
	})
	// First pass along rows.
	for y := range rows {
		lumaRow(y, line)
		box1D(line, pass1.next(), winRows)
		pass1.push()
	}
	pass1.finish()
	pass2.finish()
}

// jaroszWindow is the reference's window size: half of the input span of
// one output pixel, rounded up, since two passes of a box filter make a
// tent twice as wide.
func jaroszWindow(oldDim, newDim int) int {
	return (oldDim + 2*newDim - 1) / (2 * newDim)
}

// box1D is the reference's 1-D box filter: a running sum whose window
// grows over the first half window, slides, and shrinks at the end, each
// output being the mean of the values currently in the window.
func box1D(in, out []float32, win int) {
	n := len(in)
	half := (win + 2) / 2
	p1 := half - 1
	p2 := win - half + 1
	p3 := n - win
	p4 := half - 1
	var sum float32
	li, ri, oi, cur := 0, 0, 0, 0
	for range p1 {
		sum += in[ri]
		cur++
		ri++
	}
	for range p2 {
		sum += in[ri]
		cur++
		out[oi] = div(sum, 1/float64(cur))
		ri++
		oi++
	}
	inv := 1 / float64(cur)
	if p3 > 0 {
		// Re-sliced to equal lengths so that the loop runs without bounds
		// checks; this is the hot loop of the hash.
		add := in[ri:][:p3]
		sub := in[li:][:p3]
		o := out[oi:][:p3]
		for k := range add {
			sum += add[k]
			sum -= sub[k]
			o[k] = div(sum, inv)
		}
		li += p3
		ri += p3
		oi += p3
	}
	for range p4 {
		sum -= in[li]
		cur--
		out[oi] = div(sum, 1/float64(cur))
		li++
		oi++
	}
}

// box1DSampled runs box1D over in but writes only the outputs at the
// ascending positions at, to out[k] for at[k]. The running sum still visits
// every value, in the same order, so the sampled outputs are exactly
// box1D's.
func box1DSampled(in []float32, win int, at []int, out []float32) {
	n := len(in)
	half := (win + 2) / 2
	p1 := half - 1
	p2 := win - half + 1
	p3 := n - win
	p4 := half - 1
	var sum float32
	li, ri, oi, cur, k := 0, 0, 0, 0, 0
	emit := func() {
		for k < len(at) && at[k] == oi {
			out[k] = div(sum, 1/float64(cur))
			k++
		}
	}
	for range p1 {
		sum += in[ri]
		cur++
		ri++
	}
	for range p2 {
		sum += in[ri]
		cur++
		emit()
		ri++
		oi++
	}
	for range p3 {
		sum += in[ri]
		sum -= in[li]
		if k < len(at) && at[k] == oi {
			emit()
		}
		li++
		ri++
		oi++
	}
	for range p4 {
		sum -= in[li]
		cur--
		emit()
		li++
		oi++
	}
}

// div returns the float32 quotient sum/n given inv = 1/n in float64. For
// the window sizes here (n < 2^20) this is exactly the correctly rounded
// float32 division the reference does: sum/n is never within 2^-46
// (relative) of a float32 rounding midpoint, while the float64 product is
// within 2^-52 of sum/n. A multiply is several times cheaper than a divide,
// and the blur divides once per pixel per pass.
func div(sum float32, inv float64) float32 {
	return float32(float64(sum) * inv)
}

// colBox is box1D run down every column of a stream of rows. Rows are
// written into next() and pushed top to bottom; each output row is handed
// to emit as the column sums and the reciprocal of the window count, so the
// caller divides only where it needs values. The last win+1 input rows are
// kept to subtract the values leaving the window.
type colBox struct {
	win, half, slots, cols int
	ring, sums             []float32
	pushed, out, cur       int
	emit                   func(o int, sums []float32, inv float64)
}

func newColBox(win, cols int, emit func(o int, sums []float32, inv float64)) *colBox {
	return &colBox{
		win: win, half: (win + 2) / 2, slots: win + 1, cols: cols,
		ring: make([]float32, (win+1)*cols), sums: make([]float32, cols),
		emit: emit,
	}
}

func (c *colBox) slot(i int) []float32 { return c.ring[(i%c.slots)*c.cols:][:c.cols] }

// next returns the buffer for the next input row. It is the slot of the
// row win+1 above, which has already left the window.
func (c *colBox) next() []float32 { return c.slot(c.pushed) }

// push takes the row written into next(): the window grows over the first
// win rows, emitting from the half-window on, then slides.
func (c *colBox) push() {
	r := c.slot(c.pushed)
	sums := c.sums[:len(r)]
	if c.pushed < c.win {
		for j, v := range r {
			sums[j] += v
		}
		c.cur++
		if c.pushed >= c.half-1 {
			c.output()
		}
	} else {
		// Per column: add the incoming value, then subtract the outgoing
		// one, as the reference does.
		old := c.slot(c.pushed - c.win)[:len(r)]
		for j, v := range r {
			s := sums[j] + v
			sums[j] = s - old[j]
		}
		c.output()
	}
	c.pushed++
}

// finish emits the last half-window of rows as the window shrinks.
func (c *colBox) finish() {
	li := c.pushed - c.win
	for range c.half - 1 {
		old := c.slot(li)
		sums := c.sums[:len(old)]
		for j, v := range old {
			sums[j] -= v
		}
		c.cur--
		c.output()
		li++
	}
}

func (c *colBox) output() {
	c.emit(c.out, c.sums, 1/float64(c.cur))
	c.out++
}

// qualityMetric is the reference's heuristic: the sum of absolute
// neighbour differences of the 64x64 image, each quantised to an integer
// percentage of full scale, so that many tiny gradients do not add up to
// "quality". 90 is the reference's tuned scale.
func qualityMetric(a *[64 * 64]float32) int {
	sum := 0
	for i := range 63 {
		for j := range 64 {
			d := int(((a[i*64+j] - a[(i+1)*64+j]) * 100) / 255)
			sum += abs(d)
		}
	}
	for i := range 64 {
		for j := range 63 {
			d := int(((a[i*64+j] - a[i*64+j+1]) * 100) / 255)
			sum += abs(d)
		}
	}
	return min(sum/90, 100)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// dctMatrix is rows 1..16 of the 64-point DCT-II matrix, scaled by
// sqrt(2/64), stored as float32 after a float64 cosine as in the reference.
var dctMatrix = func() (d [16 * 64]float32) {
	scale := float64(float32(math.Sqrt(2.0 / 64.0)))
	for i := range 16 {
		for j := range 64 {
			d[i*64+j] = float32(scale * math.Cos((math.Pi/2.0/64.0)*float64(i+1)*float64(2*j+1)))
		}
	}
	return d
}()

// dct64To16 computes B = D A D^T restricted to the 16x16 lowest non-DC
// frequencies, accumulating in float32 in the reference's order.
func dct64To16(a *[64 * 64]float32, out *[16 * 16]float32) {
	var t [16 * 64]float32
	for i := range 16 {
		d := dctMatrix[i*64:][:64]
		for j := range 64 {
			var s float32
			for k := range 64 {
				s += float32(d[k] * a[k*64+j])
			}
			t[i*64+j] = s
		}
	}
	for i := range 16 {
		ti := t[i*64:][:64]
		for j := range 16 {
			d := dctMatrix[j*64:][:64]
			var s float32
			for k := range 64 {
				s += float32(ti[k] * d[k])
			}
			out[i*16+j] = s
		}
	}
}

// dctToHash sets bit k where DCT coefficient k exceeds the median. The
// median is the lower middle value (the 128th smallest), which is what the
// reference's Torben selection returns for 256 values.
func dctToHash(dct *[16 * 16]float32) Hash {
	sorted := dct[:]
	sorted = slices.Clone(sorted)
	slices.Sort(sorted)
	median := sorted[127]
	var h Hash
	for k, v := range dct {
		if v > median {
			h[31-k/8] |= 1 << (k % 8)
		}
	}
	return h
}
