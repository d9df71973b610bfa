package imaging

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"github.com/contenteval/contenteval/domain"
)

// Default limits (docs/api.md#limits: image 20 MiB / 50 MP).
const (
	DefaultMaxBytes  = 20 << 20
	DefaultMaxPixels = 50_000_000
)

// Limits bound what Decode accepts. A zero field takes its default, so the
// zero Limits is the service default.
type Limits struct {
	// MaxBytes is the largest encoded image accepted.
	MaxBytes int64
	// MaxPixels is the largest width*height accepted. It is checked from the
	// header before any pixel is decoded, because the decoded size, not the
	// encoded size, is what a decompression bomb inflates.
	MaxPixels int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxPixels <= 0 {
		l.MaxPixels = DefaultMaxPixels
	}
	return l
}

// Error is the error of Decode, DecodeConfig and ReadAll. Type is the precheck failure type
// the API reports (docs/api.md#error-bodies); Message is safe to show to a client; Err is
// the decoder's own error, for logs only.
type Error struct {
	Type     domain.PrecheckFailureType
	Format   Format
	TooLarge bool // a byte or pixel limit was exceeded
	Message  string
	Err      error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Failure returns the precheck failure detail of e for the 499 body.
func (e *Error) Failure(contentHash string) domain.PrecheckFailure {
	return domain.PrecheckFailure{Type: e.Type, Message: e.Message, ContentHash: contentHash}
}

// FailureType returns the precheck failure type of err if err is (or wraps)
// an *Error.
func FailureType(err error) (domain.PrecheckFailureType, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Type, true
	}
	return "", false
}

func invalid(f Format, msg string, err error) *Error {
	return &Error{Type: domain.PrecheckFailureInvalidImage, Format: f, Message: msg, Err: err}
}

func unsupported(f Format, msg string) *Error {
	return &Error{Type: domain.PrecheckFailureUnsupportedImageFormat, Format: f, Message: msg}
}

// ReadAll reads an image body from r, refusing it once it passes
// lim.MaxBytes without reading further (a fetched URL or an upload may be
// any size). The refusal is an *Error with TooLarge set; a read error is
// returned as is.
func ReadAll(r io.Reader, lim Limits) ([]byte, error) {
	lim = lim.withDefaults()
	data, err := io.ReadAll(io.LimitReader(r, lim.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > lim.MaxBytes {
		e := invalid(Sniff(data), fmt.Sprintf("image is larger than %d bytes", lim.MaxBytes), nil)
		e.TooLarge = true
		return nil, e
	}
	return data, nil
}

// DecodeConfig sniffs data and reads the image dimensions from its header
// without decoding pixels, checking them against lim. Errors are *Error.
func DecodeConfig(data []byte, lim Limits) (image.Config, Format, error) {
	lim = lim.withDefaults()
	if int64(len(data)) > lim.MaxBytes {
		e := invalid(FormatUnknown, fmt.Sprintf("image is larger than %d bytes", lim.MaxBytes), nil)
		e.TooLarge = true
		return image.Config{}, FormatUnknown, e
	}
	f := Sniff(data)
	switch {
	case len(data) == 0:
		return image.Config{}, f, invalid(f, "image is empty", nil)
	case f == FormatUnknown:
		return image.Config{}, f, invalid(f, "image data is not a recognised image format", nil)
	case !f.Decodable():
		return image.Config{}, f, unsupported(f, fmt.Sprintf("image format %s is not supported (supported: JPEG, PNG, GIF, WebP, BMP, TIFF)", f))
	case f == FormatWebP && isAnimatedWebP(data):
		return image.Config{}, f, unsupported(f, "animated WebP is not supported")
	}
	var cfg image.Config
	err := guard(func() error {
		var err error
		cfg, err = decodeConfig(f, data)
		return err
	})
	if err != nil {
		return image.Config{}, f, invalid(f, fmt.Sprintf("%s image header is corrupt", f), err)
	}
	if err := checkDims(f, cfg.Width, cfg.Height, lim); err != nil {
		return image.Config{}, f, err
	}
	if f == FormatJPEG {
		if n := bytes.Count(data, []byte{0xff, 0xda}); n > MaxJPEGScans {
			e := invalid(f, fmt.Sprintf("JPEG has %d scans, more than %d", n, MaxJPEGScans), nil)
			e.TooLarge = true
			return image.Config{}, f, e
		}
	}
	return cfg, f, nil
}

// MaxJPEGScans bounds the scans of a progressive JPEG. Each scan walks every
// block of the image, and a scan can be a few bytes (long end-of-band runs),
// so a small file with thousands of scans costs minutes of CPU on a large
// image. Real encoders write about 10; libjpeg-turbo's tools offer the same
// guard. Counting FF DA pairs is exact because entropy-coded data stuffs
// every FF byte (FF 00); markers inside an embedded EXIF thumbnail only
// over-count.
const MaxJPEGScans = 256

// Decode sniffs, validates and decodes an image. The dimensions are checked
// against lim from the header first, so an image that claims too many
// pixels is refused before its pixel buffer is allocated. Only the first
// frame of an animated GIF is decoded. EXIF orientation is not applied,
// matching the PDQ reference (see PDQ). Errors are *Error; Decode never
// panics, whatever the input.
func Decode(data []byte, lim Limits) (image.Image, Format, error) {
	lim = lim.withDefaults()
	if _, f, err := DecodeConfig(data, lim); err != nil {
		return nil, f, err
	}
	f := Sniff(data)
	var img image.Image
	err := guard(func() error {
		var err error
		img, err = decode(f, data)
		return err
	})
	if err != nil {
		return nil, f, invalid(f, fmt.Sprintf("%s image data is corrupt or truncated", f), err)
	}
	// A decoder may size its buffer from a field other than the one its
	// DecodeConfig reported; check what was actually produced as well.
	b := img.Bounds()
	if err := checkDims(f, b.Dx(), b.Dy(), lim); err != nil {
		return nil, f, err
	}
	return img, f, nil
}

func checkDims(f Format, w, h int, lim Limits) error {
	if w <= 0 || h <= 0 {
		return invalid(f, fmt.Sprintf("%s image has no pixels (%dx%d)", f, w, h), nil)
	}
	if int64(w)*int64(h) > lim.MaxPixels {
		e := invalid(f, fmt.Sprintf("image is %dx%d, more than the %d pixel limit", w, h, lim.MaxPixels), nil)
		e.TooLarge = true
		return e
	}
	return nil
}

func decodeConfig(f Format, data []byte) (image.Config, error) {
	r := bytes.NewReader(data)
	switch f {
	case FormatJPEG:
		return jpeg.DecodeConfig(r)
	case FormatPNG:
		return png.DecodeConfig(r)
	case FormatGIF:
		return gif.DecodeConfig(r)
	case FormatWebP:
		return webp.DecodeConfig(r)
	case FormatBMP:
		return bmp.DecodeConfig(r)
	case FormatTIFF:
		return tiff.DecodeConfig(r)
	}
	return image.Config{}, fmt.Errorf("no decoder for %s", f)
}

func decode(f Format, data []byte) (image.Image, error) {
	r := bytes.NewReader(data)
	switch f {
	case FormatJPEG:
		return jpeg.Decode(r)
	case FormatPNG:
		return png.Decode(r)
	case FormatGIF:
		return gif.Decode(r)
	case FormatWebP:
		return webp.Decode(r)
	case FormatBMP:
		return bmp.Decode(r)
	case FormatTIFF:
		return tiff.Decode(r)
	}
	return nil, fmt.Errorf("no decoder for %s", f)
}

// guard runs fn and turns a panic into an error. The stdlib and x/image
// decoders are fuzzed upstream, but a panic on hostile input would take the
// whole worker down, so a crash is treated as corrupt data.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return fn()
}

// isAnimatedWebP reports whether data is an extended WebP (VP8X) with the
// animation flag set. x/image/webp cannot decode animations and would call
// them corrupt; they are a valid format we do not support.
func isAnimatedWebP(data []byte) bool {
	// RIFF header (12) + chunk id "VP8X" (4) + size (4) + flags (1).
	return len(data) >= 21 && string(data[12:16]) == "VP8X" && data[20]&0x02 != 0
}
