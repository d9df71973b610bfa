package imaging

import (
	"bytes"
)

// Format is an image container format recognised from its leading bytes.
// Only the formats for which Decodable reports true are decoded; the others
// are recognised so that the precheck can answer
// PRECHECK_FAILURE_TYPE_UNSUPPORTED_IMAGE_FORMAT instead of claiming the
// bytes are corrupt.
type Format string

// Formats we decode (stdlib and golang.org/x/image).
const (
	FormatUnknown Format = ""
	FormatJPEG    Format = "jpeg"
	FormatPNG     Format = "png"
	FormatGIF     Format = "gif"
	FormatWebP    Format = "webp"
	FormatBMP     Format = "bmp"
	FormatTIFF    Format = "tiff"
)

// Formats we recognise but do not decode.
const (
	FormatHEIF     Format = "heif" // HEIC and other HEIF brands
	FormatAVIF     Format = "avif"
	FormatSVG      Format = "svg"
	FormatJPEGXL   Format = "jxl"
	FormatJPEG2000 Format = "jp2"
	FormatJPEGXR   Format = "jxr"
	FormatICO      Format = "ico" // also CUR
	FormatPSD      Format = "psd"
	FormatQOI      Format = "qoi"
	FormatDDS      Format = "dds"
	FormatEXR      Format = "exr"
	FormatPNM      Format = "pnm"
	FormatXCF      Format = "xcf"
	FormatHDR      Format = "hdr"
	FormatBPG      Format = "bpg"
	FormatFLIF     Format = "flif"
	FormatFarbfeld Format = "farbfeld"
	FormatBigTIFF  Format = "bigtiff"
)

// Decodable reports whether Decode can decode images of this format.
func (f Format) Decodable() bool {
	switch f {
	case FormatJPEG, FormatPNG, FormatGIF, FormatWebP, FormatBMP, FormatTIFF:
		return true
	}
	return false
}

// MIMEType returns the usual media type of the format, or
// "application/octet-stream" when there is none.
func (f Format) MIMEType() string {
	switch f {
	case FormatJPEG:
		return "image/jpeg"
	case FormatPNG:
		return "image/png"
	case FormatGIF:
		return "image/gif"
	case FormatWebP:
		return "image/webp"
	case FormatBMP:
		return "image/bmp"
	case FormatTIFF, FormatBigTIFF:
		return "image/tiff"
	case FormatHEIF:
		return "image/heif"
	case FormatAVIF:
		return "image/avif"
	case FormatSVG:
		return "image/svg+xml"
	case FormatJPEGXL:
		return "image/jxl"
	case FormatJPEG2000:
		return "image/jp2"
	case FormatJPEGXR:
		return "image/jxr"
	case FormatICO:
		return "image/vnd.microsoft.icon"
	case FormatPSD:
		return "image/vnd.adobe.photoshop"
	}
	return "application/octet-stream"
}

// String returns the format name, "unknown" for FormatUnknown.
func (f Format) String() string {
	if f == FormatUnknown {
		return "unknown"
	}
	return string(f)
}

// Sniff recognises the image format from the leading bytes of data. It
// reads at most the first 1 KiB (SVG is text and may start with a prolog),
// so a caller fetching a URL can sniff the first bytes before reading the
// rest. It returns FormatUnknown when nothing matches.
func Sniff(data []byte) Format {
	has := func(off int, magic string) bool {
		return len(data) >= off+len(magic) && string(data[off:off+len(magic)]) == magic
	}
	switch {
	case has(0, "\xff\xd8\xff"):
		return FormatJPEG
	case has(0, "\x89PNG\r\n\x1a\n"):
		return FormatPNG
	case has(0, "GIF87a"), has(0, "GIF89a"):
		return FormatGIF
	case has(0, "RIFF") && has(8, "WEBP"):
		return FormatWebP
	case has(0, "BM") && len(data) >= 26:
		// "BM" alone is too weak a signal for two bytes of text; a BMP has
		// at least a 14-byte file header and a 12-byte core header.
		return FormatBMP
	case has(0, "II*\x00"), has(0, "MM\x00*"):
		return FormatTIFF
	case has(0, "II+\x00"), has(0, "MM\x00+"):
		return FormatBigTIFF
	case has(4, "ftyp"):
		return sniffISOBMFF(data)
	case has(0, "\xff\x0a"), has(0, "\x00\x00\x00\x0cJXL \r\n\x87\n"):
		return FormatJPEGXL
	case has(0, "\x00\x00\x00\x0cjP  \r\n\x87\n"), has(0, "\xff\x4f\xff\x51"):
		return FormatJPEG2000
	case has(0, "II\xbc"):
		return FormatJPEGXR
	case (has(0, "\x00\x00\x01\x00") || has(0, "\x00\x00\x02\x00")) && len(data) >= 6 && (data[4] != 0 || data[5] != 0):
		return FormatICO
	case has(0, "8BPS"):
		return FormatPSD
	case has(0, "qoif"):
		return FormatQOI
	case has(0, "DDS "):
		return FormatDDS
	case has(0, "\x76\x2f\x31\x01"):
		return FormatEXR
	case has(0, "gimp xcf"):
		return FormatXCF
	case has(0, "#?RADIANCE"), has(0, "#?RGBE"):
		return FormatHDR
	case has(0, "BPG\xfb"):
		return FormatBPG
	case has(0, "FLIF"):
		return FormatFLIF
	case has(0, "farbfeld"):
		return FormatFarbfeld
	case len(data) >= 3 && data[0] == 'P' && data[1] >= '1' && data[1] <= '7' && isSpace(data[2]):
		return FormatPNM
	}
	if isSVG(data) {
		return FormatSVG
	}
	return FormatUnknown
}

// sniffISOBMFF tells HEIF and AVIF apart from other ISO base media files
// (MP4, QuickTime, ...), which are not images and so stay unknown. The
// major brand decides first; "mif1"/"msf1" are generic image brands, so the
// compatible brands decide between AVIF and HEIF.
func sniffISOBMFF(data []byte) Format {
	if len(data) < 12 {
		return FormatUnknown
	}
	boxLen := int(uint32(data[0])<<24 | uint32(data[1])<<16 | uint32(data[2])<<8 | uint32(data[3]))
	if boxLen < 16 || boxLen > len(data) {
		boxLen = min(len(data), 64)
	}
	major := string(data[8:12])
	var compat []string
	for off := 16; off+4 <= boxLen; off += 4 {
		compat = append(compat, string(data[off:off+4]))
	}
	classify := func(brand string) Format {
		switch brand {
		case "avif", "avis":
			return FormatAVIF
		case "heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs":
			return FormatHEIF
		}
		return FormatUnknown
	}
	if f := classify(major); f != FormatUnknown {
		return f
	}
	for _, b := range compat {
		if f := classify(b); f != FormatUnknown {
			return f
		}
	}
	if major == "mif1" || major == "msf1" {
		return FormatHEIF
	}
	return FormatUnknown
}

// isSVG reports whether data looks like an SVG document: after an optional
// BOM and whitespace it starts with markup, and an <svg element opens within
// the first KiB.
func isSVG(data []byte) bool {
	head := data[:min(len(data), 1024)]
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '<' {
		return false
	}
	lower := bytes.ToLower(head)
	if bytes.HasPrefix(lower, []byte("<!doctype html")) || bytes.HasPrefix(lower, []byte("<html")) {
		// A web page with inline SVG is not an image.
		return false
	}
	return bytes.Contains(lower, []byte("<svg"))
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }
