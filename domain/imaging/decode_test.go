package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"testing/iotest"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/contenteval/contenteval/domain"
)

// testImage draws a deterministic gradient with some noise, so that every
// format has real content to hash.
func testImage(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	for y := range h {
		for x := range w {
			m.SetNRGBA(x, y, color.NRGBA{
				R: uint8(x * 255 / w), G: uint8(y * 255 / h),
				B: uint8((x ^ y) + rng.IntN(16)), A: 255,
			})
		}
	}
	return m
}

func encode(t testing.TB, f Format, m image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	switch f {
	case FormatJPEG:
		err = jpeg.Encode(&buf, m, &jpeg.Options{Quality: 90})
	case FormatPNG:
		err = png.Encode(&buf, m)
	case FormatGIF:
		err = gif.Encode(&buf, m, nil)
	case FormatBMP:
		err = bmp.Encode(&buf, m)
	case FormatTIFF:
		err = tiff.Encode(&buf, m, &tiff.Options{Compression: tiff.Deflate})
	default:
		t.Fatalf("no encoder for %s", f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeFormats(t *testing.T) {
	t.Parallel()
	src := testImage(97, 61)
	tests := []struct {
		name   string
		data   []byte
		format Format
		w, h   int
	}{
		{"jpeg", encode(t, FormatJPEG, src), FormatJPEG, 97, 61},
		{"png", encode(t, FormatPNG, src), FormatPNG, 97, 61},
		{"gif", encode(t, FormatGIF, src), FormatGIF, 97, 61},
		{"bmp", encode(t, FormatBMP, src), FormatBMP, 97, 61},
		{"tiff", encode(t, FormatTIFF, src), FormatTIFF, 97, 61},
		{"webp lossless", readTestdata(t, "formats/gopher-doc.1bpp.lossless.webp"), FormatWebP, 0, 0},
		{"webp lossy", readTestdata(t, "formats/blue-purple-pink.lossy.webp"), FormatWebP, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			img, f, err := Decode(tt.data, Limits{})
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if f != tt.format {
				t.Errorf("format %q, want %q", f, tt.format)
			}
			b := img.Bounds()
			if tt.w != 0 && (b.Dx() != tt.w || b.Dy() != tt.h) {
				t.Errorf("size %dx%d, want %dx%d", b.Dx(), b.Dy(), tt.w, tt.h)
			}
			cfg, f2, err := DecodeConfig(tt.data, Limits{})
			if err != nil || f2 != f || cfg.Width != b.Dx() || cfg.Height != b.Dy() {
				t.Errorf("DecodeConfig = %v, %q, %v; want %dx%d", cfg, f2, err, b.Dx(), b.Dy())
			}
			if _, q := PDQ(img); q <= 0 {
				t.Errorf("PDQ quality %d on a textured image", q)
			}
		})
	}
}

// TestDecodeSameHashAcrossLosslessFormats checks that the lossless formats
// decode to the same pixels, seen through PDQ.
func TestDecodeSameHashAcrossLosslessFormats(t *testing.T) {
	t.Parallel()
	src := testImage(80, 120)
	want, wq := PDQ(src)
	for _, f := range []Format{FormatPNG, FormatBMP, FormatTIFF} {
		img, _, err := Decode(encode(t, f, src), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if h, q := PDQ(img); h != want || q != wq {
			t.Errorf("%s: PDQ %s %d, want %s %d", f, h, q, want, wq)
		}
	}
}

// isoBMFF builds the leading ftyp box of a HEIF/AVIF/MP4 file.
func isoBMFF(major string, compat ...string) []byte {
	var b bytes.Buffer
	size := 16 + 4*len(compat)
	binary.Write(&b, binary.BigEndian, uint32(size))
	b.WriteString("ftyp" + major + "\x00\x00\x00\x00")
	for _, c := range compat {
		b.WriteString(c)
	}
	b.WriteString("\x00\x00\x00\x08meta") // the next box
	return b.Bytes()
}

func TestDecodeUnsupportedFormats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		data   []byte
		format Format
	}{
		{"heic", isoBMFF("heic", "mif1", "heic"), FormatHEIF},
		{"heif mif1", isoBMFF("mif1", "mif1", "miaf"), FormatHEIF},
		{"avif", isoBMFF("avif", "avif", "mif1", "miaf"), FormatAVIF},
		{"avif via mif1", isoBMFF("mif1", "avif", "mif1"), FormatAVIF},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`), FormatSVG},
		{"svg with prolog", []byte("\xef\xbb\xbf\n<?xml version=\"1.0\"?>\n<!DOCTYPE svg>\n<svg></svg>"), FormatSVG},
		{"jpeg xl codestream", []byte("\xff\x0a\xfa\x7f\x01\x90\x08"), FormatJPEGXL},
		{"jpeg xl container", []byte("\x00\x00\x00\x0cJXL \r\n\x87\n\x00\x00\x00\x14ftypjxl "), FormatJPEGXL},
		{"jpeg 2000", []byte("\x00\x00\x00\x0cjP  \r\n\x87\n\x00\x00\x00\x14ftypjp2 "), FormatJPEG2000},
		{"ico", []byte("\x00\x00\x01\x00\x01\x00\x10\x10\x00\x00\x01\x00\x20\x00"), FormatICO},
		{"psd", []byte("8BPS\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03"), FormatPSD},
		{"qoi", []byte("qoif\x00\x00\x00\x01\x00\x00\x00\x01\x04\x00"), FormatQOI},
		{"bigtiff", []byte("II+\x00\x08\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"), FormatBigTIFF},
		{"pnm", []byte("P6\n2 2\n255\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), FormatPNM},
		{"animated webp", animatedWebPHeader(), FormatWebP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, f, err := Decode(tt.data, Limits{})
			if f != tt.format {
				t.Errorf("format %q, want %q", f, tt.format)
			}
			typ, ok := FailureType(err)
			if !ok || typ != domain.PrecheckFailureUnsupportedImageFormat {
				t.Fatalf("Decode error %v (type %q), want UNSUPPORTED_IMAGE_FORMAT", err, typ)
			}
			var e *Error
			if !errors.As(err, &e) || e.Message == "" || e.TooLarge {
				t.Errorf("error %#v", e)
			}
		})
	}
}

func animatedWebPHeader() []byte {
	var b bytes.Buffer
	b.WriteString("RIFF\x00\x00\x00\x00WEBP")
	b.WriteString("VP8X\x0a\x00\x00\x00")
	b.Write([]byte{0x02, 0, 0, 0, 9, 0, 0, 9, 0, 0}) // animation flag, 10x10
	b.WriteString("ANIM\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	out := b.Bytes()
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	return out
}

func TestDecodeInvalid(t *testing.T) {
	t.Parallel()
	jpg := encode(t, FormatJPEG, testImage(64, 64))
	pngData := encode(t, FormatPNG, testImage(64, 64))
	badCRC := bytes.Clone(pngData)
	badCRC[29] ^= 0xff // inside the IHDR CRC
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"text", []byte("hello, world")},
		{"random", bytes.Repeat([]byte{0x13, 0x37, 0xc0, 0xde}, 64)},
		{"mp4 is not an image", isoBMFF("isom", "isom", "mp41")},
		{"truncated jpeg", jpg[:len(jpg)/3]},
		{"jpeg magic only", []byte("\xff\xd8\xff")},
		{"truncated png", pngData[:len(pngData)/2]},
		{"png bad crc", badCRC},
		{"gif garbage", []byte("GIF89a\xff\xff\xff\xff\x00\x00garbage")},
		{"webp garbage", []byte("RIFF\x10\x00\x00\x00WEBPVP8 \x04\x00\x00\x00junk")},
		{"bmp garbage", append([]byte("BM"), bytes.Repeat([]byte{0xff}, 60)...)},
		{"tiff garbage", append([]byte("II*\x00"), bytes.Repeat([]byte{0xee}, 60)...)},
		{"zero-size png", pngHeader(0, 10)},
		{"web page with inline svg", []byte("<!DOCTYPE html><html><body><svg></svg></body></html>")},
		{"jpeg scan bomb", append(bytes.Clone(jpg[:len(jpg)-2]), bytes.Repeat([]byte{0xff, 0xda}, MaxJPEGScans)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			img, _, err := Decode(tt.data, Limits{})
			if img != nil {
				t.Errorf("got an image")
			}
			typ, ok := FailureType(err)
			if !ok || typ != domain.PrecheckFailureInvalidImage {
				t.Fatalf("Decode error %v (type %q), want INVALID_IMAGE", err, typ)
			}
		})
	}
}

// pngHeader is a PNG signature and a valid IHDR chunk claiming w x h RGB
// pixels, with no image data.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := make([]byte, 0, 17)
	chunk = append(chunk, "IHDR"...)
	chunk = binary.BigEndian.AppendUint32(chunk, w)
	chunk = binary.BigEndian.AppendUint32(chunk, h)
	chunk = append(chunk, 8, 2, 0, 0, 0) // 8-bit RGB
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

// TestDecodeBombRefusedFromHeader checks that a header claiming 100000 x
// 100000 pixels (10 GP, 30 GB decoded) is refused from the header alone:
// no pixel buffer is allocated.
func TestDecodeBombRefusedFromHeader(t *testing.T) {
	// Not parallel: it measures the allocations of this goroutine's work.
	data := pngHeader(100000, 100000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	img, f, err := Decode(data, Limits{})
	runtime.ReadMemStats(&after)
	if img != nil || f != FormatPNG {
		t.Fatalf("Decode = %v, %q", img, f)
	}
	var e *Error
	if !errors.As(err, &e) || !e.TooLarge || e.Type != domain.PrecheckFailureInvalidImage {
		t.Fatalf("error %v, want a TooLarge INVALID_IMAGE", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
		t.Errorf("allocated %d bytes refusing a header", grown)
	}
}

func TestDecodeLimits(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(40, 30)) // 1200 pixels
	tests := []struct {
		name    string
		lim     Limits
		tooBig  bool
		wantErr bool
	}{
		{"defaults", Limits{}, false, false},
		{"pixels exactly at limit", Limits{MaxPixels: 1200}, false, false},
		{"pixels over limit", Limits{MaxPixels: 1199}, true, true},
		{"bytes over limit", Limits{MaxBytes: int64(len(data) - 1)}, true, true},
		{"bytes at limit", Limits{MaxBytes: int64(len(data))}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Decode(data, tt.lim)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			var e *Error
			if err != nil && (!errors.As(err, &e) || e.TooLarge != tt.tooBig) {
				t.Errorf("err %#v, TooLarge want %v", err, tt.tooBig)
			}
		})
	}
}

func TestSniffDecodableAndMIME(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{FormatJPEG, FormatPNG, FormatGIF, FormatWebP, FormatBMP, FormatTIFF} {
		if !f.Decodable() || f.MIMEType() == "application/octet-stream" {
			t.Errorf("%s: Decodable %v MIME %s", f, f.Decodable(), f.MIMEType())
		}
	}
	for _, f := range []Format{FormatUnknown, FormatHEIF, FormatAVIF, FormatSVG} {
		if f.Decodable() {
			t.Errorf("%s decodable", f)
		}
	}
	if Sniff([]byte("BM")) != FormatUnknown {
		t.Error(`"BM" alone sniffed as BMP`)
	}
	if FormatUnknown.String() != "unknown" {
		t.Error(FormatUnknown.String())
	}
}

func TestErrorFailureDetail(t *testing.T) {
	t.Parallel()
	_, _, err := Decode([]byte("nope"), Limits{})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	d := e.Failure("sha256::abc")
	if d.Type != domain.PrecheckFailureInvalidImage || d.ContentHash != "sha256::abc" || d.Message == "" {
		t.Errorf("%+v", d)
	}
	if _, ok := FailureType(errors.New("other")); ok {
		t.Error("FailureType of a foreign error")
	}
}

func TestReadAll(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(10, 10))
	got, err := ReadAll(bytes.NewReader(data), Limits{MaxBytes: int64(len(data))})
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("at the limit: %v", err)
	}
	_, err = ReadAll(bytes.NewReader(data), Limits{MaxBytes: int64(len(data) - 1)})
	var e *Error
	if !errors.As(err, &e) || !e.TooLarge || e.Format != FormatPNG {
		t.Fatalf("over the limit: %v", err)
	}
	boom := errors.New("boom")
	if _, err := ReadAll(iotest.ErrReader(boom), Limits{}); err != boom {
		t.Fatalf("read error: %v", err)
	}
}
