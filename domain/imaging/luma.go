package imaging

// Luminance for PDQ: 8-bit RGB to float32 luma in the reference's arithmetic,
// with fast paths for the image types the decoders return.

import (
	"image"
	"image/color"
)

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
