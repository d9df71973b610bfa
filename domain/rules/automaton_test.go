package rules

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// TestWordAutomatonMatchesNaive compares the automaton with a naive matcher on random
// word sequences over a small vocabulary, where overlaps and shared prefixes and
// suffixes are frequent.
func TestWordAutomatonMatchesNaive(t *testing.T) {
	t.Parallel()
	vocab := []string{"a", "b", "c", "d", sepWord}
	r := rand.New(rand.NewPCG(7, 7))
	for round := 0; round < 200; round++ {
		var patterns [][]string
		for i := 0; i < 1+r.IntN(12); i++ {
			p := make([]string, 1+r.IntN(4))
			for j := range p {
				p[j] = vocab[r.IntN(len(vocab)-1)]
			}
			patterns = append(patterns, p)
		}
		text := make([]string, r.IntN(40))
		for i := range text {
			text[i] = vocab[r.IntN(len(vocab))]
			if r.IntN(10) == 0 {
				text[i] = "zzz" // a word no pattern has
			}
		}
		a := newWordAutomaton(patterns)
		var ids []uint32
		for _, w := range text {
			ids = a.ids(ids, w)
		}
		var got []string
		a.scan(ids, func(id, s, e int) { got = append(got, fmt.Sprint(id, s, e)) })
		var want []string
		for id, p := range patterns {
			for s := 0; s+len(p) <= len(text); s++ {
				if reflect.DeepEqual(text[s:s+len(p)], p) {
					want = append(want, fmt.Sprint(id, s, s+len(p)))
				}
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: patterns %q text %q\ngot  %v\nwant %v", round, patterns, text, got, want)
		}
	}
}
