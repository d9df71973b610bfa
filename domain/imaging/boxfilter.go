package imaging

// The Jarosz box filter and 64x64 decimation of PDQ, streamed row by row.

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
