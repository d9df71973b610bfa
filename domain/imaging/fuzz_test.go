package imaging

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
)

// FuzzDecode feeds arbitrary bytes through Decode and, when they decode,
// PDQ: nothing may panic, every error is an *Error with one of the two
// failure types, and an accepted image respects the limits.
func FuzzDecode(f *testing.F) {
	src := testImage(24, 17)
	for _, format := range []Format{FormatJPEG, FormatPNG, FormatGIF, FormatBMP, FormatTIFF} {
		f.Add(encode(f, format, src))
	}
	for _, name := range []string{
		"formats/gopher-doc.1bpp.lossless.webp", "formats/blue-purple-pink.lossy.webp",
		"pdq/labelme/q0003.jpg", "pdq/misc/small.jpg",
	} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(pngHeader(100000, 100000))
	f.Add(animatedWebPHeader())
	f.Add(isoBMFF("heic", "mif1"))
	f.Add([]byte("<svg/>"))
	f.Add([]byte{})

	// Small limits keep each iteration fast; the limit logic is the same.
	lim := Limits{MaxBytes: 1 << 20, MaxPixels: 1 << 18}
	f.Fuzz(func(t *testing.T, data []byte) {
		img, format, err := Decode(data, lim)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not an *Error", err, err)
			}
			if e.Type != domain.PrecheckFailureInvalidImage && e.Type != domain.PrecheckFailureUnsupportedImageFormat {
				t.Fatalf("failure type %q", e.Type)
			}
			if e.Message == "" || img != nil {
				t.Fatalf("error %+v with image %v", e, img != nil)
			}
			return
		}
		if !format.Decodable() {
			t.Fatalf("decoded undecodable format %q", format)
		}
		b := img.Bounds()
		if b.Empty() || int64(b.Dx())*int64(b.Dy()) > lim.MaxPixels {
			t.Fatalf("accepted bounds %v", b)
		}
		h, q := PDQ(img)
		if q < 0 || q > 100 {
			t.Fatalf("quality %d", q)
		}
		if b.Dx() < minHashableDim || b.Dy() < minHashableDim {
			if !h.IsZero() {
				t.Fatalf("tiny image %v hashed to %s", b, h)
			}
		}
	})
}

// FuzzParseHashList parses arbitrary text as each kind of list: no panic,
// every entry well-formed and in line order, every error a *ParseError or
// none at all.
func FuzzParseHashList(f *testing.F) {
	f.Add("# list\n" + md5A + "\n\n" + strings.ToUpper(md5A) + " # x\n")
	f.Add(sha1A + "\r\n")
	f.Add(pdqA + " 100\n" + pdqA + ",7\n" + pdqA + "\n")
	f.Add("\xef\xbb\xbf" + pdqA + "\t0")
	f.Add(strings.Repeat("a", 5000))
	f.Add("zz\n")
	f.Fuzz(func(t *testing.T, text string) {
		for _, kind := range []Kind{KindMD5, KindSHA1, KindPDQ} {
			last := 0
			err := ParseHashList(strings.NewReader(text), kind, func(e HashEntry) error {
				if e.Line <= last || len(e.Hex) != hexLen(kind) || e.Hex != strings.ToLower(e.Hex) {
					t.Fatalf("%s entry %+v after line %d", kind, e, last)
				}
				if kind == KindPDQ && (e.PDQ.String() != e.Hex || e.Quality < -1 || e.Quality > 100) {
					t.Fatalf("pdq entry %+v", e)
				}
				last = e.Line
				return nil
			})
			var pe *ParseError
			if err != nil && (!errors.As(err, &pe) || pe.Line < 1) {
				t.Fatalf("%s: error %v", kind, err)
			}
		}
	})
}
