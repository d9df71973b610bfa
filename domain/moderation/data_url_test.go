package moderation

import (
	"bytes"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
)

func TestParseDataURL(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		want      []byte
		err       string
	}{
		{"padded", "data:image/png;base64,aGVsbG8=", []byte("hello"), ""},
		{"unpadded", "data:image/png;base64,aGVsbG8", []byte("hello"), ""},
		{"upper-case scheme and params", "DATA:Image/JPEG;name=x.jpg;BASE64,aGk=", []byte("hi"), ""},
		{"not data", "http://x/y.png", nil, "http(s) or data:"},
		{"no comma", "data:image/png;base64", nil, "no comma"},
		{"not an image", "data:text/plain;base64,aGk=", nil, "image/*"},
		{"no media type", "data:;base64,aGk=", nil, "image/*"},
		{"not base64", "data:image/png,hello", nil, "base64-encoded"},
		{"bad base64", "data:image/png;base64,%%%", nil, "invalid base64"},
		{"empty data", "data:image/png;base64,", nil, "no data"},
		{"too long", "data:image/png;base64," + strings.Repeat("A", maxDataURLLength), nil, "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDataURL("input[0].image_url.url", tc.url)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if domain.ErrorCode(err) != domain.InvalidArgument {
					t.Fatalf("code = %v", domain.ErrorCode(err))
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// FuzzParseDataURL: any string is either decoded to some bytes or refused
// with INVALID_ARGUMENT naming the field; never a panic.
func FuzzParseDataURL(f *testing.F) {
	for _, s := range []string{"data:image/png;base64,aGVsbG8=", "data:image/png;base64,aGVsbG8", "data:,", "data:image/;base64,====", "DATA:image/x;;base64,QQ", "data:image/png;base64,\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseDataURL("f", s)
		if err != nil {
			if domain.ErrorCode(err) != domain.InvalidArgument {
				t.Fatalf("code %v for %q", domain.ErrorCode(err), s)
			}
			return
		}
		if len(b) == 0 || !isDataURL(s) {
			t.Fatalf("accepted %q as %d bytes", s, len(b))
		}
	})
}
