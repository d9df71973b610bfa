package rules

import "testing"

func TestWithinOneEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want bool
	}{
		{"loser", "loser", true},
		{"loser", "lozer", true},  // substitution
		{"loser", "losr", true},   // deletion
		{"loser", "loserx", true}, // insertion
		{"idiot", "idoit", true},  // adjacent swap
		{"idiot", "oidit", false},
		{"loser", "lzsr", false},
		{"abc", "abcde", false},
		{"kíll", "kill", true}, // runes, not bytes
	}
	for _, tc := range tests {
		if got := withinOneEdit(tc.a, tc.b); got != tc.want {
			t.Errorf("withinOneEdit(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := withinOneEdit(tc.b, tc.a); got != tc.want {
			t.Errorf("withinOneEdit(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestMaybeDictWordAgreesWithDictionary checks that the Bloom filter in front of the
// dictionary never turns a word away: it may only answer "no" for non-words.
func TestMaybeDictWordAgreesWithDictionary(t *testing.T) {
	t.Parallel()
	for _, w := range benchWords(t)[:20000] {
		if !maybeDictWord(w) {
			t.Fatalf("maybeDictWord(%q) = false for a dictionary word", w)
		}
	}
	for _, w := range []string{"youidiot", "scunthorpe", "qwertyuiop", "skillz", "klil"} {
		if got, want := maybeDictWord(w), isDictWord(w); got != want {
			t.Errorf("maybeDictWord(%q) = %v, isDictWord says %v", w, got, want)
		}
	}
}
