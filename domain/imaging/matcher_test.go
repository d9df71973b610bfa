package imaging

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/contenteval/contenteval/domain"
)

func TestBands(t *testing.T) {
	t.Parallel()
	b := DefaultBands()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[int]domain.PrecheckMatchConfidence{
		0: domain.MatchConfidenceHigh, 10: domain.MatchConfidenceHigh,
		11: domain.MatchConfidenceMedium, 20: domain.MatchConfidenceMedium,
		21: domain.MatchConfidenceLow, 31: domain.MatchConfidenceLow,
		32: "", -1: "",
	} {
		got, ok := b.Confidence(d)
		if got != want || ok != (want != "") {
			t.Errorf("distance %d: %q %v, want %q", d, got, ok, want)
		}
	}
	for _, bad := range []Bands{{-1, 2, 3}, {5, 4, 6}, {1, 7, 6}, {1, 2, 257}} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func TestMatcherCheck(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(21, 22))
	pdqBase := randomHash(rng)
	pdqs := randomEntries(rng, 1000)
	pdqs = append(pdqs, IndexEntry{Hash: pdqBase, List: "ncmec"})
	md5hex := MD5Hex([]byte("bad bytes"))
	sha1hex := SHA1Hex([]byte("other bad bytes"))
	hl, err := NewHashLists(
		[]ExactEntry{{Hex: strings.ToUpper(md5hex), List: "md5-list"}, {Hex: md5hex, List: "second"}},
		[]ExactEntry{{Hex: sha1hex, List: "sha1-list"}},
		pdqs)
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c := hl.Len(); a != 1 || b != 1 || c != 1001 {
		t.Fatalf("Len %d %d %d", a, b, c)
	}
	m := NewMatcher(hl)
	bands := DefaultBands()
	noPDQ := randomHash(rng)

	tests := []struct {
		name      string
		md5, sha1 string
		pdq       Hash
		hasPDQ    bool
		bands     Bands
		want      domain.PrecheckMatchConfidence
		kind      Kind
		list      string
		distance  int
	}{
		{"md5 exact, first list wins", md5hex, "", noPDQ, false, bands, domain.MatchConfidenceExact, KindMD5, "md5-list", 0},
		{"md5 upper case query", strings.ToUpper(md5hex), "", noPDQ, false, bands, domain.MatchConfidenceExact, KindMD5, "md5-list", 0},
		{"sha1 exact", MD5Hex([]byte("clean")), sha1hex, noPDQ, false, bands, domain.MatchConfidenceExact, KindSHA1, "sha1-list", 0},
		{"exact beats pdq", md5hex, "", pdqBase, true, bands, domain.MatchConfidenceExact, KindMD5, "md5-list", 0},
		{"pdq identical", "", "", pdqBase, true, bands, domain.MatchConfidenceHigh, KindPDQ, "ncmec", 0},
		{"pdq 10 high", "", "", flipBits(rng, pdqBase, 10), true, bands, domain.MatchConfidenceHigh, KindPDQ, "ncmec", 10},
		{"pdq 11 medium", "", "", flipBits(rng, pdqBase, 11), true, bands, domain.MatchConfidenceMedium, KindPDQ, "ncmec", 11},
		{"pdq 20 medium", "", "", flipBits(rng, pdqBase, 20), true, bands, domain.MatchConfidenceMedium, KindPDQ, "ncmec", 20},
		{"pdq 21 low", "", "", flipBits(rng, pdqBase, 21), true, bands, domain.MatchConfidenceLow, KindPDQ, "ncmec", 21},
		{"pdq 31 low", "", "", flipBits(rng, pdqBase, 31), true, bands, domain.MatchConfidenceLow, KindPDQ, "ncmec", 31},
		{"pdq 32 no match", "", "", flipBits(rng, pdqBase, 32), true, bands, "", "", "", 0},
		{"pdq ignored without hasPDQ", "", "", pdqBase, false, bands, "", "", "", 0},
		{"custom bands", "", "", flipBits(rng, pdqBase, 6), true, Bands{2, 5, 8}, domain.MatchConfidenceLow, KindPDQ, "ncmec", 6},
		{"zero bands are the defaults", "", "", flipBits(rng, pdqBase, 15), true, Bands{}, domain.MatchConfidenceMedium, KindPDQ, "ncmec", 15},
		{"invalid bands match no pdq", "", "", pdqBase, true, Bands{5, 1, 3}, "", "", "", 0},
		{"malformed hex is no match", "xyz", "12", noPDQ, false, bands, "", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := m.Check(tt.md5, tt.sha1, tt.pdq, tt.hasPDQ, tt.bands)
			want := Result{Matched: tt.want != "", Confidence: tt.want, Kind: tt.kind, List: tt.list, Distance: tt.distance}
			if r != want {
				t.Errorf("Check = %+v, want %+v", r, want)
			}
		})
	}
}

func TestMatcherEmptyAndBadLists(t *testing.T) {
	t.Parallel()
	if r := NewMatcher(nil).Check(MD5Hex(nil), SHA1Hex(nil), Hash{}, true, DefaultBands()); r.Matched {
		t.Errorf("empty matcher matched: %+v", r)
	}
	if _, err := NewHashLists([]ExactEntry{{Hex: "abc", List: "x"}}, nil, nil); err == nil {
		t.Error("short md5 accepted")
	}
	if _, err := NewHashLists(nil, []ExactEntry{{Hex: strings.Repeat("z", 40), List: "x"}}, nil); err == nil {
		t.Error("non-hex sha1 accepted")
	}
}

// TestMatcherReloadWhileChecking swaps snapshots while checks run (under
// -race). Both snapshots hold the queried hash, under different list
// names, so every check must match one of them: no check may see a
// half-built or missing snapshot.
func TestMatcherReloadWhileChecking(t *testing.T) {
	t.Parallel()
	target := MD5Hex([]byte("target"))
	snapshot := func(list string, extra int) *HashLists {
		es := []ExactEntry{{Hex: target, List: list}}
		for i := range extra {
			es = append(es, ExactEntry{Hex: MD5Hex([]byte{byte(i), byte(i >> 8)}), List: list})
		}
		hl, err := NewHashLists(es, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return hl
	}
	a, b := snapshot("a", 10), snapshot("b", 500)
	m := NewMatcher(a)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5000 {
				r := m.Check(target, "", Hash{}, false, Bands{})
				if !r.Matched || (r.List != "a" && r.List != "b") {
					t.Errorf("check during reload: %+v", r)
					return
				}
			}
		})
	}
	for i := range 500 {
		if i%2 == 0 {
			m.Load(b)
		} else {
			m.Load(a)
		}
	}
	wg.Wait()
}
