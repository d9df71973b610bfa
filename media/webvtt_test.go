package media

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestParseWebVTT(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want []ch
	}{
		{name: "signature only", in: "WEBVTT"},
		{name: "signature with text and header", in: "WEBVTT - a title\nKind: captions\n\n"},
		{
			name: "cues with and without identifiers, settings ignored",
			in: "WEBVTT\n\n1\n00:00:00.500 --> 00:00:01.500\nhello there\n\n" +
				"00:01.500 --> 00:03.000 align:start position:10%\nI will kill you\n\n" +
				"intro-3\n01:00:04.200 --> 01:00:05.000\nnice weather\n",
			want: []ch{{500, 1500, "hello there"}, {1500, 3000, "I will kill you"}, {3_604_200, 3_605_000, "nice weather"}},
		},
		{
			name: "BOM, CRLF and multi-line payload",
			in:   "\uFEFFWEBVTT\r\n\r\n00:00:01.000 --> 00:00:02.000\r\nline one\r\nline two\r\n",
			want: []ch{{1000, 2000, "line one\nline two"}},
		},
		{
			name: "markup removed, entities decoded",
			in:   "WEBVTT\n\n00:00.000 --> 00:01.000\n<v Roger Bingham><b>kill</b> &amp; <i>run</i> <00:00:00.500>now &lt;3\n",
			want: []ch{{0, 1000, "kill & run now <3"}},
		},
		{
			name: "NOTE, STYLE and REGION blocks skipped",
			in: "WEBVTT\n\nNOTE this is\na comment\n\nSTYLE\n::cue { color: red }\n\nREGION\nid:fred\n\n" +
				"00:00:05.000 --> 00:00:06.000\nafter\n",
			want: []ch{{5000, 6000, "after"}},
		},
		{
			name: "cues sorted by start, empty cues dropped, zero-length kept",
			in: "WEBVTT\n\n00:00:05.000 --> 00:00:06.000\nsecond\n\n00:00:01.000 --> 00:00:02.000\nfirst\n\n" +
				"00:00:03.000 --> 00:00:04.000\n<i></i>\n\n00:00:07.000 --> 00:00:07.000\npoint\n",
			want: []ch{{1000, 2000, "first"}, {5000, 6000, "second"}, {7000, 7000, "point"}},
		},
		{
			name: "unclosed tag kept as text",
			in:   "WEBVTT\n\n00:00.000 --> 00:01.000\na < b\n",
			want: []ch{{0, 1000, "a < b"}},
		},
		{
			name: "three-digit hours",
			in:   "WEBVTT\n\n100:00:00.000 --> 100:00:01.000\nlate\n",
			want: []ch{{360_000_000, 360_001_000, "late"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseWebVTT(tc.in)
			require.NoError(t, err)
			require.Equal(t, chunksOf(tc.want), got)
		})
	}
}

func TestParseWebVTTErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		line int
	}{
		{"empty", "", 1},
		{"no signature", "00:00:00.000 --> 00:00:01.000\nhi\n", 1},
		{"signature glued to text", "WEBVTTX\n", 1},
		{"SRT, not WebVTT", "1\n00:00:00,000 --> 00:00:01,000\nhi\n", 1},
		{"cue in the header", "WEBVTT\n00:00:00.000 --> 00:00:01.000\nhi\n", 2},
		{"comma decimal", "WEBVTT\n\n00:00:00,000 --> 00:00:01,000\nhi\n", 3},
		{"end before start", "WEBVTT\n\n00:00:02.000 --> 00:00:01.000\nhi\n", 3},
		{"minutes out of range", "WEBVTT\n\n00:61:00.000 --> 00:62:00.000\nhi\n", 3},
		{"two-digit ms", "WEBVTT\n\n00:00:00.00 --> 00:00:01.000\nhi\n", 3},
		{"missing end", "WEBVTT\n\n00:00:00.000 -->\nhi\n", 3},
		{"garbage block", "WEBVTT\n\nhello\nworld\n", 3},
		{"identifier without timing", "WEBVTT\n\nid-only\n", 3},
		{"timing in the payload", "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nhi\n00:00:01.000 --> 00:00:02.000\nthere\n", 5},
		{"negative", "WEBVTT\n\n-00:01.000 --> 00:02.000\nhi\n", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWebVTT(tc.in)
			var ve *VTTError
			require.True(t, errors.As(err, &ve), "got %v", err)
			require.Equal(t, tc.line, ve.Line, ve.Msg)
		})
	}
	_, err := ParseWebVTT("WEBVTT\n\n" + strings.Repeat("x", MaxCaptionsBytes))
	require.Error(t, err)
}

func TestParseTimestamp(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"00:00.000": 0, "00:00.001": 1, "59:59.999": 3_599_999, "01:00:00.000": 3_600_000,
		"999:59:59.999": 999*3_600_000 + 3_599_999,
	} {
		got, err := parseTimestamp(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "0:00.000", "00:0.000", "00:00.0000", "1000:00:00.000", "00:00:60.000", "aa:bb.ccc", "00:00:00:00.000", "0:00:00.000"} {
		_, err := parseTimestamp(in)
		require.Error(t, err, in)
	}
}

// FuzzParseWebVTT: the parser never panics, and what it returns is sane:
// sorted, non-negative, ordered bounds, valid UTF-8 text with content.
func FuzzParseWebVTT(f *testing.F) {
	for _, s := range []string{
		"WEBVTT\n\n00:00.000 --> 00:01.000\nhi\n",
		"WEBVTT\n\nNOTE x\n\nid\n01:00:00.000 --> 01:00:01.000 align:start\n<b>a</b> &amp;\n",
		"\uFEFFWEBVTT\r\n\r\n00:00:01.000 --> 00:00:00.500\r\nx",
		"WEBVTT\n\n999:59:59.999 --> 999:59:59.999\n<",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		chunks, err := ParseWebVTT(s)
		if err != nil {
			var ve *VTTError
			if !errors.As(err, &ve) {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		for i, c := range chunks {
			if c.StartMs < 0 || c.EndMs < c.StartMs {
				t.Fatalf("bad bounds %+v", c)
			}
			if i > 0 && chunks[i-1].StartMs > c.StartMs {
				t.Fatalf("not sorted at %d", i)
			}
			if strings.TrimSpace(c.Text) == "" {
				t.Fatalf("empty chunk %+v", c)
			}
			if utf8.ValidString(s) && !utf8.ValidString(c.Text) {
				t.Fatalf("invalid UTF-8 from valid input: %q", c.Text)
			}
		}
	})
}
