package imaging

import (
	"errors"
	"strings"
	"testing"
)

func collect(t *testing.T, text string, kind Kind) ([]HashEntry, error) {
	t.Helper()
	var got []HashEntry
	err := ParseHashList(strings.NewReader(text), kind, func(e HashEntry) error {
		got = append(got, e)
		return nil
	})
	return got, err
}

const (
	md5A  = "8bbbaa9540800e378beadc8bbef7bb32"
	sha1A = "7fdbc7fe30189f0a16fbaae7162c9c5eb3c7987c"
	pdqA  = "6227401f601ff4ccafcc9fad4b0d95d371a2eb7265a3285234d228ca94deeb2d"
)

func TestParseHashList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kind    Kind
		text    string
		want    []HashEntry // Line, Hex, Quality compared
		errLine int         // 0: no error
	}{
		{"md5 with comments and blanks", KindMD5,
			"\xef\xbb\xbf# list\n\n" + strings.ToUpper(md5A) + "\r\n  " + md5A + "  # dup\n",
			[]HashEntry{{Line: 3, Hex: md5A, Quality: -1}, {Line: 4, Hex: md5A, Quality: -1}}, 0},
		{"sha1", KindSHA1, sha1A + "\n", []HashEntry{{Line: 1, Hex: sha1A, Quality: -1}}, 0},
		{"pdq forms", KindPDQ,
			pdqA + "\n" + pdqA + " 100\n" + pdqA + ",87\n" + pdqA + "\t0\n",
			[]HashEntry{{Line: 1, Hex: pdqA, Quality: -1}, {Line: 2, Hex: pdqA, Quality: 100},
				{Line: 3, Hex: pdqA, Quality: 87}, {Line: 4, Hex: pdqA, Quality: 0}}, 0},
		{"empty", KindMD5, "", nil, 0},
		{"md5 too short", KindMD5, "# x\n" + md5A[:31] + "\n", nil, 2},
		{"sha1 given to md5", KindMD5, sha1A + "\n", nil, 1},
		{"non hex", KindSHA1, "z" + sha1A[1:] + "\n", nil, 1},
		{"md5 trailing text", KindMD5, md5A + " file.jpg\n", nil, 1},
		{"pdq bad quality", KindPDQ, pdqA + " 101\n", nil, 1},
		{"pdq quality not a number", KindPDQ, pdqA + ",x\n", nil, 1},
		{"error after good lines", KindPDQ, pdqA + "\n\n" + pdqA + "0\n", []HashEntry{{Line: 1, Hex: pdqA, Quality: -1}}, 3},
		{"overlong line", KindMD5, md5A + "\n" + strings.Repeat("a", MaxHashListLine+10) + "\n", []HashEntry{{Line: 1, Hex: md5A, Quality: -1}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := collect(t, tt.text, tt.kind)
			var pe *ParseError
			switch {
			case tt.errLine == 0 && err != nil:
				t.Fatalf("error %v", err)
			case tt.errLine != 0 && (!errors.As(err, &pe) || pe.Line != tt.errLine):
				t.Fatalf("error %v, want a ParseError on line %d", err, tt.errLine)
			case tt.errLine != 0 && !strings.HasPrefix(err.Error(), "line "):
				t.Errorf("error %q does not lead with the line", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d entries, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Line != w.Line || g.Hex != w.Hex || g.Quality != w.Quality {
					t.Errorf("entry %d = %+v, want %+v", i, g, w)
				}
				if tt.kind == KindPDQ && g.PDQ.String() != g.Hex {
					t.Errorf("entry %d PDQ %s", i, g.PDQ)
				}
			}
		})
	}
}

func TestParseHashListCallbackErrorStops(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	n := 0
	err := ParseHashList(strings.NewReader(md5A+"\n"+md5A+"\n"), KindMD5, func(HashEntry) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("err %v after %d calls", err, n)
	}
	if err := ParseHashList(strings.NewReader(""), Kind("crc32"), func(HashEntry) error { return nil }); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Kind{"md5": KindMD5, " SHA1 ": KindSHA1, "Pdq": KindPDQ} {
		if k, err := ParseKind(in); err != nil || k != want {
			t.Errorf("ParseKind(%q) = %q, %v", in, k, err)
		}
	}
	if _, err := ParseKind("sha256"); err == nil {
		t.Error("sha256 accepted")
	}
}

func TestDigests(t *testing.T) {
	t.Parallel()
	d := Digest([]byte("abc"))
	if d.MD5 != "900150983cd24fb0d6963f7d28e17f72" ||
		d.SHA1 != "a9993e364706816aba3e25717850c26c9cd0d89d" ||
		d.SHA256 != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("%+v", d)
	}
	if ContentHash([]byte("abc")) != "sha256::"+d.SHA256 || d.ContentHash() != ContentHash([]byte("abc")) {
		t.Error(ContentHash([]byte("abc")))
	}
	if MD5Hex(nil) != "d41d8cd98f00b204e9800998ecf8427e" || SHA1Hex(nil) != "da39a3ee5e6b4b0d3255bfef95601890afd80709" {
		t.Error("empty digests")
	}
}
