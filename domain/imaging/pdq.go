package imaging

// The PDQ hash: the Hash type, PDQ itself, the quality metric and the DCT that
// turns the 64x64 image into hash bits. Luminance is in luma.go, the blur and
// decimation in boxfilter.go.

import (
	"encoding/hex"
	"fmt"
	"image"
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
