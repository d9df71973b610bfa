package hashlists

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
)

var (
	pdqA = strings.Repeat("a", 64)
	pdqB = strings.Repeat("B", 64)
	md5A = strings.Repeat("0", 32)
)

type parser func(r io.Reader, k domain.HashKind, fn func(NewHash) error) error

// collect runs parse over in and returns what it yielded.
func collect(parse parser, in string, k domain.HashKind) ([]NewHash, error) {
	var out []NewHash
	err := parse(strings.NewReader(in), k, func(h NewHash) error { out = append(out, h); return nil })
	return out, err
}

func TestParseLines(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kind     domain.HashKind
		want     []NewHash
		badLine  int
	}{
		{"bare", pdqA + "\n", domain.HashPDQ, []NewHash{{Hash: pdqA}}, 0},
		{"provenance", "\xef\xbb\xbf" + pdqB + ", bank , note, with comma\n", domain.HashPDQ,
			[]NewHash{{Hash: strings.ToLower(pdqB), Source: "bank", Note: "note, with comma"}}, 0},
		{"comments and blanks", "# header\n\n" + md5A + ",src\n", domain.HashMD5, []NewHash{{Hash: md5A, Source: "src"}}, 0},
		{"wrong length", pdqA + "\n" + md5A + "\n", domain.HashPDQ, nil, 2},
		{"not hex", "\n" + strings.Repeat("g", 32) + "\n", domain.HashMD5, nil, 2},
		{"long source", pdqA + "," + strings.Repeat("s", MaxSourceLen+1) + "\n", domain.HashPDQ, nil, 1},
		{"long line", pdqA + "\n" + strings.Repeat("x", MaxLineBytes+10), domain.HashPDQ, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collect(ParseLines, tc.in, tc.kind)
			if tc.badLine > 0 {
				var le *LineError
				if !errors.As(err, &le) || le.Line != tc.badLine {
					t.Fatalf("err = %v, want line %d", err, tc.badLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %+v, want %+v", got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseHMA(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kind     domain.HashKind
		want     []NewHash
		badLine  int
	}{
		{"bank export", "bank_name,bank_content_id,signal_type,signal_value\nNCMEC,1,pdq," + pdqA + "\nNCMEC,2,video_md5," + md5A + "\n",
			domain.HashPDQ, []NewHash{{Hash: pdqA, Source: "NCMEC", Note: "1"}}, 0},
		{"md5 rows", "signal_type,signal\npdq," + pdqA + "\nvideo_md5," + md5A + "\n", domain.HashMD5, []NewHash{{Hash: md5A}}, 0},
		{"quoted", "signal_type,signal_value,bank_name\npdq," + pdqA + ",\"A, B\"\n", domain.HashPDQ, []NewHash{{Hash: pdqA, Source: "A, B"}}, 0},
		{"no header", "", domain.HashPDQ, nil, 1},
		{"header without signal columns", "a,b\n", domain.HashPDQ, nil, 1},
		{"unknown signal type", "signal_type,signal_value\npdq," + pdqA + "\ntmk,x\n", domain.HashPDQ, nil, 3},
		{"bad hash", "signal_type,signal_value\n\npdq,abc\n", domain.HashPDQ, nil, 3},
		{"short row", "bank_name,signal_type,signal_value\nx,pdq\n", domain.HashPDQ, nil, 2},
		{"unterminated quote", "signal_type,signal_value\npdq,\"" + pdqA + "\n", domain.HashPDQ, nil, 2},
		{"long line", "signal_type,signal_value\n" + strings.Repeat("x", MaxLineBytes+10), domain.HashPDQ, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := collect(ParseHMA, tc.in, tc.kind)
			if tc.badLine > 0 {
				var le *LineError
				if !errors.As(err, &le) || le.Line != tc.badLine {
					t.Fatalf("err = %v, want line %d", err, tc.badLine)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %+v, want %+v", got[i], tc.want[i])
				}
			}
		})
	}
}

// fuzzParser checks the parser's promises on any input: no panic, every
// hash it yields is a valid lowercase hash of the kind with bounded
// provenance, and every failure is a *LineError with a line >= 1.
func fuzzParser(f *testing.F, parse parser, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, k := range []domain.HashKind{domain.HashPDQ, domain.HashMD5, domain.HashSHA1} {
			err := parse(strings.NewReader(in), k, func(h NewHash) error {
				if norm, err := NormalizeHash(k, h.Hash); err != nil || norm != h.Hash {
					t.Fatalf("yielded %q for %s", h.Hash, k)
				}
				if len(h.Source) > MaxSourceLen || len(h.Note) > MaxNoteLen {
					t.Fatalf("provenance too long: %d, %d", len(h.Source), len(h.Note))
				}
				return nil
			})
			var le *LineError
			if err != nil && (!errors.As(err, &le) || le.Line < 1) {
				t.Fatalf("error %v is not a line error", err)
			}
		}
	})
}

func FuzzParseLines(f *testing.F) {
	fuzzParser(f, ParseLines, pdqA+",src,note\n", "# x\n"+md5A+"\n", "\xef\xbb\xbf"+pdqB, ",,,\n")
}

func FuzzParseHMA(f *testing.F) {
	fuzzParser(f, ParseHMA, "signal_type,signal_value\npdq,"+pdqA+"\n", "bank_name,signal_type,signal\nx,md5,"+md5A+"\n",
		"signal_type,signal_value\n\"pdq\",\"", "signal_type\n")
}
