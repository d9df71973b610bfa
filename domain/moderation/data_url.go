package moderation

import (
	"encoding/base64"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// maxDataURLLength bounds a data: URL before it is decoded: a 20 MiB image
// is under 28 MiB of base64, and the request body is smaller still.
const maxDataURLLength = 48 << 20

// isDataURL reports whether u is a data: URL (the scheme is case-insensitive).
func isDataURL(u string) bool {
	return len(u) >= 5 && strings.EqualFold(u[:5], "data:")
}

// parseDataURL decodes a `data:image/<format>;base64,<data>` URL into the
// image bytes, which then go through the same decoding and precheck as the
// `image` content of a job. field names the URL in errors. Only base64
// image data is accepted: OpenAI's image parts carry nothing else.
func parseDataURL(field, u string) ([]byte, error) {
	if len(u) > maxDataURLLength {
		return nil, domain.InvalidField(field, "data URL is too long")
	}
	if !isDataURL(u) {
		return nil, domain.InvalidField(field, "must be an http(s) or data: URL")
	}
	meta, data, ok := strings.Cut(u[5:], ",")
	if !ok {
		return nil, domain.InvalidField(field, "data URL has no comma before its data")
	}
	params := strings.Split(meta, ";")
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(params[0])), "image/") {
		return nil, domain.InvalidField(field, "data URL must carry an image/* media type")
	}
	if !strings.EqualFold(strings.TrimSpace(params[len(params)-1]), "base64") {
		return nil, domain.InvalidField(field, "data URL must be base64-encoded (;base64,)")
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(data, "=") && len(data)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	b, err := enc.DecodeString(data)
	if err != nil {
		return nil, domain.InvalidField(field, "data URL has invalid base64 data")
	}
	if len(b) == 0 {
		return nil, domain.InvalidField(field, "data URL has no data")
	}
	return b, nil
}
