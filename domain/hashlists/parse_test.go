package hashlists

import (
	"errors"
	"io"
	"os"
	"slices"
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

// signalCSV is ParseSignalCSV as a parser (its count of skipped rows is
// checked in its own tests).
func signalCSV(r io.Reader, k domain.HashKind, fn func(NewHash) error) error {
	_, err := ParseSignalCSV(r, k, fn)
	return err
}

// collectCSV runs ParseSignalCSV over r and returns what it yielded and
// skipped.
func collectCSV(r io.Reader, k domain.HashKind) ([]NewHash, int, error) {
	var out []NewHash
	skipped, err := ParseSignalCSV(r, k, func(h NewHash) error { out = append(out, h); return nil })
	return out, skipped, err
}

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

// TestParseSignalCSVDatasetExport reads a file in the exact shape
// `threatexchange dataset -P --csv` writes: every signal type of its sample
// data, quoted fields, space-separated tags.
func TestParseSignalCSVDatasetExport(t *testing.T) {
	for _, tc := range []struct {
		kind    domain.HashKind
		want    []NewHash
		skipped int
	}{
		{domain.HashPDQ, []NewHash{
			{Hash: "f8f8f0cee0f4a84f06370a22038f63f0b36e2ed596621e1d33e6b39c4e9c9b22", Source: "Sample Signals", Note: "TRUE_POSITIVE; tags: media_type_photo"},
			{Hash: "30a10efd71cc3d429013d48d0ffffc52e34e0e17ada952a9d29685211ea9e5af", Source: "Industry Hash Sharing, Q3", Note: "TRUE_POSITIVE"},
		}, 5},
		{domain.HashMD5, []NewHash{
			{Hash: "d35c785545392755e7e4164457657269", Source: "Sample Signals", Note: "TRUE_POSITIVE; tags: media_type_video csam"},
		}, 6},
		{domain.HashSHA1, nil, 7},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			f, err := os.Open("testdata/threatexchange_dataset.csv")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, skipped, err := collectCSV(f, tc.kind)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) || skipped != tc.skipped {
				t.Fatalf("got %+v, %d skipped; want %+v, %d skipped", got, skipped, tc.want, tc.skipped)
			}
		})
	}
}

func TestParseSignalCSV(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kind     domain.HashKind
		want     []NewHash
		skipped  int
		badLine  int
	}{
		{"bank columns", "bank_name,bank_content_id,signal_type,signal_value\nNCMEC,1,pdq," + pdqA + "\nNCMEC,2,video_md5," + md5A + "\n",
			domain.HashPDQ, []NewHash{{Hash: pdqA, Source: "NCMEC", Note: "1"}}, 1, 0},
		{"md5 rows", "signal_type,signal\npdq," + pdqA + "\nvideo_md5," + md5A + "\nphoto_md5," + md5A + "\n", domain.HashMD5,
			[]NewHash{{Hash: md5A}, {Hash: md5A}}, 1, 0},
		{"quoted", "signal_type,signal_str,collab\npdq," + pdqA + ",\"A, B\"\n", domain.HashPDQ, []NewHash{{Hash: pdqA, Source: "A, B"}}, 0, 0},
		{"other signal types skipped", "signal_type,signal_str\nvpdq,x\nPDQ," + pdqA + "\nvideo_tmk,zzz\n", domain.HashPDQ,
			[]NewHash{{Hash: pdqA}}, 2, 0},
		{"no header", "", domain.HashPDQ, nil, 0, 1},
		{"header without signal columns", "a,b\n", domain.HashPDQ, nil, 0, 1},
		{"empty signal type", "signal_type,signal_str\npdq," + pdqA + "\n,x\n", domain.HashPDQ, nil, 0, 3},
		{"bad hash", "signal_type,signal_str\n\npdq,abc\n", domain.HashPDQ, nil, 0, 3},
		{"short row", "collab,signal_type,signal_str\nx,pdq\n", domain.HashPDQ, nil, 0, 2},
		{"unterminated quote", "signal_type,signal_str\npdq,\"" + pdqA + "\n", domain.HashPDQ, nil, 0, 2},
		{"long line", "signal_type,signal_str\n" + strings.Repeat("x", MaxLineBytes+10), domain.HashPDQ, nil, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped, err := collectCSV(strings.NewReader(tc.in), tc.kind)
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
			if !slices.Equal(got, tc.want) || skipped != tc.skipped {
				t.Fatalf("got %+v, %d skipped; want %+v, %d skipped", got, skipped, tc.want, tc.skipped)
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

func FuzzParseSignalCSV(f *testing.F) {
	fuzzParser(f, signalCSV, "collab,signal_type,signal_str,category,tags\nc,pdq,"+pdqA+",TRUE_POSITIVE,a b\n", "bank_name,signal_type,signal\nx,md5,"+md5A+"\n",
		"signal_type,signal_value\n\"pdq\",\"", "signal_type\n")
}
