package media

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/contenteval/contenteval/safehttp"
)

// Fetcher fetches a customer URL under the SSRF rules of DESIGN §5.
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
			bw, _ := strconv.ParseInt(attr(l, "BANDWIDTH"), 10, 64)
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

// playlistLines returns the non-empty lines of a playlist, trimmed.
func playlistLines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 4096), maxLine)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// attr returns the value of NAME=value or NAME="value" in a tag line.
func attr(line, name string) string {
	i := strings.Index(line, name+"=")
	for i > 0 && line[i-1] != ':' && line[i-1] != ',' {
		j := strings.Index(line[i+1:], name+"=")
		if j < 0 {
			return ""
		}
		i += 1 + j
	}
	if i < 0 {
		return ""
	}
	v := line[i+len(name)+1:]
	if strings.HasPrefix(v, `"`) {
		if end := strings.IndexByte(v[1:], '"'); end >= 0 {
			return v[1 : 1+end]
		}
		return ""
	}
	if end := strings.IndexByte(v, ','); end >= 0 {
		v = v[:end]
	}
	return v
}

// setAttr replaces the quoted value of name in a tag line.
func setAttr(line, name, value string) string {
	old := name + `="` + attr(line, name) + `"`
	return strings.Replace(line, old, name+`="`+value+`"`, 1)
}

// segmentExts are the extensions kept for downloaded segments, so that the
// hls demuxer's extension allow-list accepts them; anything else is saved as
// .ts, the HLS default.
var segmentExts = map[string]bool{".ts": true, ".m4s": true, ".mp4": true, ".aac": true, ".m4a": true, ".m4v": true, ".mp3": true, ".ac3": true, ".ec3": true, ".vtt": true}

// localizeHLS downloads every resource a media playlist names (segments,
// EXT-X-MAP init sections, EXT-X-KEY keys) through the fetcher into dir and
// returns the playlist rewritten to the local names, so that ffmpeg reads
// only local files and never a URL of the customer's (which would bypass
// the SSRF checks). Segment bytes are hashed in playlist order into h; the
// downloaded total is bounded by maxBytes.
func (a *Analyzer) localizeHLS(ctx context.Context, playlist, base, dir string, h hash.Hash, maxBytes int64) (string, error) {
	baseURL, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	local := map[string]string{}
	var total int64
	n := 0
	fetch := func(ref, ext string, hashIt bool) (string, error) {
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
	}
	var out strings.Builder
	segments := 0
	for _, l := range playlistLines(playlist) {
		switch {
		case strings.HasPrefix(l, "#EXT-X-KEY:") || strings.HasPrefix(l, "#EXT-X-MAP:"):
			if uri := attr(l, "URI"); uri != "" {
				ext := ".key"
				if strings.HasPrefix(l, "#EXT-X-MAP:") {
					ext = ".mp4"
				}
				name, err := fetch(uri, ext, false)
				if err != nil {
					return "", err
				}
				l = setAttr(l, "URI", name)
			}
		case strings.HasPrefix(l, "#"):
		default:
			u, _ := url.Parse(l)
			ext := ".ts"
			if u != nil && segmentExts[strings.ToLower(path.Ext(u.Path))] {
				ext = strings.ToLower(path.Ext(u.Path))
			}
			name, err := fetch(l, ext, true)
			if err != nil {
				return "", err
			}
			segments++
			l = name
		}
		out.WriteString(l)
		out.WriteByte('\n')
	}
	if segments == 0 {
		return "", errors.New("the playlist has no segments")
	}
	// A live playlist has no end tag; what was listed is what we analyse.
	if !strings.Contains(out.String(), "#EXT-X-ENDLIST") {
		out.WriteString("#EXT-X-ENDLIST\n")
	}
	return out.String(), nil
}

var (
	errTooManySegments = errors.New("the playlist lists too many resources")
	errInputTooLarge   = errors.New("the media is larger than the limit")
)

// fetchError is a failure to fetch the customer's URL (or one it names).
type fetchError struct{ err error }

func (e *fetchError) Error() string { return "fetch: " + e.err.Error() }
func (e *fetchError) Unwrap() error { return e.err }
