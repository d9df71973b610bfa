package media

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/contenteval/contenteval/safehttp"
)

// Fetcher fetches a customer URL under the SSRF rules of docs/api.md#url-fetching.
// *safehttp.Client implements it. Its body arrives in memory, bounded by the
// client's MaxBytes: safehttp has no streaming read yet, so a direct video
// URL is held once in memory while it is written to the temporary file
// (HLS segments, being small, do not have this cost).
type Fetcher interface {
	Get(ctx context.Context, raw string) (*safehttp.Response, error)
}

// hlsContentTypes are the media types servers give HLS playlists.
var hlsContentTypes = []string{"application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl"}

// isHLSURL reports whether a URL names an HLS playlist by its extension.
func isHLSURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && strings.EqualFold(path.Ext(u.Path), ".m3u8")
}

// isHLSResponse reports whether a fetched body is an HLS playlist, by its
// media type or its signature.
func isHLSResponse(contentType string, body []byte) bool {
	ct := strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	for _, t := range hlsContentTypes {
		if ct == t {
			return true
		}
	}
	b := strings.TrimPrefix(string(body[:min(len(body), 16)]), "\uFEFF")
	return strings.HasPrefix(b, "#EXTM3U")
}

// maxHLSSegments bounds the entries of one media playlist (four hours of 2 s
// segments is 7,200).
const maxHLSSegments = 20_000

// hlsVariant picks the variant of a master playlist to analyse: the one with
// the highest BANDWIDTH, because the hash precheck and the scene detector
// work best on the best picture. It returns "" for a media playlist.
func hlsVariant(playlist string) (string, error) {
	var best string
	bestBW := int64(-1)
	pending := int64(-2) // -2: the previous line was not EXT-X-STREAM-INF
	for _, l := range playlistLines(playlist) {
		switch {
		case strings.HasPrefix(l, "#EXT-X-STREAM-INF:"):
			a, _ := parseAttrs(strings.TrimPrefix(l, "#EXT-X-STREAM-INF:"))
			bw, _ := strconv.ParseInt(a["BANDWIDTH"], 10, 64)
			pending = max(bw, 0)
		case strings.HasPrefix(l, "#"):
		case pending != -2:
			if pending > bestBW {
				best, bestBW = l, pending
			}
			pending = -2
		}
	}
	if bestBW < 0 && strings.Contains(playlist, "#EXT-X-STREAM-INF") {
		return "", errors.New("a master playlist without variant URIs")
	}
	return best, nil
}

// playlistLines returns the non-empty lines of a playlist, trimmed. A line
// ends at LF, CR or NUL, where ffmpeg's playlist reader ends it too, so that
// nothing can hide from us inside what we take for one line.
func playlistLines(s string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' || r == 0 }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// errBadAttrs is an attribute list that does not parse.
var errBadAttrs = errors.New("a malformed attribute list")

// parseAttrs parses the attribute list of a tag (RFC 8216 §4.2): NAME=value
// pairs separated by commas, each value either quoted (no quote inside) or
// running to the next comma. Names are returned in upper case. A name given
// twice is an error, as the RFC asks of clients: a reader that took the
// other one would fetch something else than we did.
func parseAttrs(s string) (map[string]string, error) {
	m := map[string]string{}
	for {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, errBadAttrs
		}
		name := strings.ToUpper(strings.TrimSpace(s[:eq]))
		if name == "" || strings.TrimLeft(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
			return nil, errBadAttrs
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		var v string
		if strings.HasPrefix(s, `"`) {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				return nil, errBadAttrs
			}
			v, s = s[1:1+end], strings.TrimLeft(s[2+end:], " \t")
		} else {
			end := strings.IndexByte(s, ',')
			if end < 0 {
				end = len(s)
			}
			v, s = strings.TrimSpace(s[:end]), s[end:]
			if strings.ContainsRune(v, '"') {
				return nil, errBadAttrs
			}
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%w: %s given twice", errBadAttrs, name)
		}
		m[name] = v
		if s == "" {
			return m, nil
		}
		if s[0] != ',' {
			return nil, errBadAttrs
		}
		s = s[1:]
	}
}

// segmentExts are the extensions kept for downloaded segments, so that the
// hls demuxer's extension allow-list accepts them; anything else is saved as
// .ts, the HLS default.
var segmentExts = map[string]bool{".ts": true, ".m4s": true, ".mp4": true, ".aac": true, ".m4a": true, ".m4v": true, ".mp3": true, ".ac3": true, ".ec3": true, ".vtt": true}

// hlsAllowedExtensions is the hls demuxer's extension allow-list for the
// remux: the extensions rewriteHLS gives the files it names, no other.
const hlsAllowedExtensions = "ts,m4s,mp4,aac,m4a,m4v,mp3,ac3,ec3,vtt,key"

// hlsResolver stores a resource a playlist names (ref, relative to the
// playlist) as a local file and returns the file's name; ext is the
// extension to give it, hashIt whether its bytes count to the content hash.
type hlsResolver func(ref, ext string, hashIt bool) (string, error)

// rewriteHLS returns the local copy of a media playlist that the remux
// reads: every resource it names (segments, EXT-X-MAP init sections,
// EXT-X-KEY keys) replaced by the local name resolve gives it, so that
// ffmpeg reads only files we wrote and never a URL of the customer's (which
// would bypass the SSRF checks) nor a path of the server's.
//
// The copy is written, not edited: it holds only the tags the remux needs,
// each rebuilt from its parsed and checked values (EXTINF, BYTERANGE,
// TARGETDURATION, MEDIA-SEQUENCE, DISCONTINUITY, ENDLIST, KEY, MAP). Every
// other tag is left out — EXT-X-MEDIA and EXT-X-STREAM-INF name playlists
// ffmpeg would open — and nothing of the customer's text reaches ffmpeg
// except numbers we formatted and the key's IV checked as hex. A live
// playlist gets the end tag: what was listed is what we analyse.
func rewriteHLS(playlist string, resolve hlsResolver) (string, error) {
	lines := playlistLines(playlist)
	if len(lines) == 0 || strings.TrimPrefix(lines[0], "\uFEFF") != "#EXTM3U" {
		return "", errors.New("not an HLS playlist: the first line is not #EXTM3U")
	}
	var out strings.Builder
	out.WriteString("#EXTM3U\n")
	segments, ended := 0, false
	for _, l := range lines[1:] {
		tag, value, _ := strings.Cut(l, ":")
		var line string
		switch {
		case !strings.HasPrefix(l, "#"):
			name, err := resolve(l, segmentExt(l), true)
			if err != nil {
				return "", err
			}
			segments++
			line = name
		case tag == "#EXTINF":
			// The duration, before the title and any attributes (IPTV
			// lists write #EXTINF:-1 tvg-id="…",Title).
			d, _, _ := strings.Cut(value, ",")
			d, _, _ = strings.Cut(strings.TrimSpace(d), " ")
			f, err := strconv.ParseFloat(d, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return "", fmt.Errorf("a malformed EXTINF duration %q", d)
			}
			line = "#EXTINF:" + strconv.FormatFloat(max(f, 0), 'f', -1, 64) + ","
		case tag == "#EXT-X-BYTERANGE":
			if !validByteRange(value) {
				return "", fmt.Errorf("a malformed EXT-X-BYTERANGE %q", value)
			}
			line = tag + ":" + value
		case tag == "#EXT-X-TARGETDURATION" || tag == "#EXT-X-MEDIA-SEQUENCE":
			n, err := strconv.ParseUint(strings.TrimSpace(value), 10, 63)
			if err != nil {
				return "", fmt.Errorf("a malformed %s %q", tag[1:], value)
			}
			line = tag + ":" + strconv.FormatUint(n, 10)
		case tag == "#EXT-X-DISCONTINUITY" || tag == "#EXT-X-ENDLIST":
			line, ended = tag, ended || tag == "#EXT-X-ENDLIST"
		case tag == "#EXT-X-KEY":
			var err error
			if line, err = rewriteKey(value, resolve); err != nil {
				return "", err
			}
		case tag == "#EXT-X-MAP":
			a, err := parseAttrs(value)
			if err != nil {
				return "", fmt.Errorf("EXT-X-MAP: %w", err)
			}
			if a["URI"] == "" {
				return "", errors.New("an EXT-X-MAP without URI")
			}
			name, err := resolve(a["URI"], ".mp4", false)
			if err != nil {
				return "", err
			}
			line = `#EXT-X-MAP:URI="` + name + `"`
			if br, ok := a["BYTERANGE"]; ok {
				if !validByteRange(br) {
					return "", fmt.Errorf("a malformed EXT-X-MAP BYTERANGE %q", br)
				}
				line += `,BYTERANGE="` + br + `"`
			}
		default:
			continue
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if segments == 0 {
		return "", errors.New("the playlist has no segments")
	}
	if !ended {
		out.WriteString("#EXT-X-ENDLIST\n")
	}
	return out.String(), nil
}

// rewriteKey rebuilds an EXT-X-KEY tag from its attribute list.
func rewriteKey(attrs string, resolve hlsResolver) (string, error) {
	a, err := parseAttrs(attrs)
	if err != nil {
		return "", fmt.Errorf("EXT-X-KEY: %w", err)
	}
	switch m := a["METHOD"]; m {
	case "NONE":
		return "#EXT-X-KEY:METHOD=NONE", nil
	case "AES-128", "SAMPLE-AES":
		if a["URI"] == "" {
			return "", errors.New("an EXT-X-KEY without URI")
		}
		name, err := resolve(a["URI"], ".key", false)
		if err != nil {
			return "", err
		}
		line := "#EXT-X-KEY:METHOD=" + m + `,URI="` + name + `"`
		if iv, ok := a["IV"]; ok {
			if !validIV(iv) {
				return "", fmt.Errorf("a malformed EXT-X-KEY IV %q", iv)
			}
			line += ",IV=" + iv
		}
		return line, nil
	default:
		return "", fmt.Errorf("unsupported EXT-X-KEY METHOD %q", m)
	}
}

// segmentExt is the extension a segment is saved with.
func segmentExt(ref string) string {
	if u, err := url.Parse(ref); err == nil {
		if ext := strings.ToLower(path.Ext(u.Path)); segmentExts[ext] {
			return ext
		}
	}
	return ".ts"
}

// validByteRange reports whether s is n[@o] in decimal digits.
func validByteRange(s string) bool {
	n, o, hasO := strings.Cut(s, "@")
	return isDigits(n) && (!hasO || isDigits(o))
}

// validIV reports whether s is 0x and at most 128 bits of hex.
func validIV(s string) bool {
	h, ok := strings.CutPrefix(strings.ToLower(s), "0x")
	return ok && h != "" && len(h) <= 32 && strings.Trim(h, "0123456789abcdef") == ""
}

func isDigits(s string) bool {
	return s != "" && len(s) <= 18 && strings.Trim(s, "0123456789") == ""
}

// localizeHLS downloads every resource a media playlist names through the
// fetcher into dir and returns the local playlist (rewriteHLS). Segment
// bytes are hashed in playlist order into h; the downloaded total is bounded
// by maxBytes.
func (a *Analyzer) localizeHLS(ctx context.Context, playlist, base, dir string, h hash.Hash, maxBytes int64) (string, error) {
	baseURL, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	local := map[string]string{}
	var total int64
	n := 0
	return rewriteHLS(playlist, func(ref, ext string, hashIt bool) (string, error) {
		u, err := baseURL.Parse(ref)
		if err != nil {
			return "", fmt.Errorf("bad URI in playlist: %w", err)
		}
		abs := u.String()
		if name, ok := local[abs]; ok {
			return name, nil
		}
		if n++; n > maxHLSSegments {
			return "", errTooManySegments
		}
		resp, err := a.fetcher.Get(ctx, abs)
		if err != nil {
			return "", &fetchError{err: err}
		}
		if total += int64(len(resp.Body)); total > maxBytes {
			return "", errInputTooLarge
		}
		if hashIt {
			h.Write(resp.Body)
		}
		name := fmt.Sprintf("r%05d%s", n, ext)
		if err := os.WriteFile(filepath.Join(dir, name), resp.Body, 0o600); err != nil {
			return "", err
		}
		local[abs] = name
		return name, nil
	})
}

var (
	errTooManySegments = errors.New("the playlist lists too many resources")
	errInputTooLarge   = errors.New("the media is larger than the limit")
)

// fetchError is a failure to fetch the customer's URL (or one it names).
type fetchError struct{ err error }

func (e *fetchError) Error() string { return "fetch: " + e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }
