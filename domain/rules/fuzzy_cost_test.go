package rules

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// maxVariants bounds the entries one fuzzy phrase word adds to the fuzzy vocabulary:
// its inflections (at most 11, see inflections) and its swaps (3 for a 4-letter word).
const maxVariants = 14

// fuzzyBoundSources are the fuzzy matcher's compile bounds: one 64 KiB phrase, of real words or
// of one word, and 10,000 phrases.
func fuzzyBoundSources(tb testing.TB) []struct{ name, src string } {
	tb.Helper()
	words := benchWords(tb)
	var long strings.Builder
	for i := 0; long.Len() < 64<<10-64; i++ {
		long.WriteString(words[(i*7919)%len(words)])
		long.WriteByte(' ')
	}
	var many strings.Builder
	many.WriteString("LABEL \"a\" {\n")
	for _, p := range benchPhrases(words, 10000, 9) {
		fmt.Fprintf(&many, "  ~(%q)\n", p)
	}
	many.WriteString("}\n")
	return []struct{ name, src string }{
		{"phrase-64KiB-words", `LABEL "a" { ~("` + long.String() + `") }`},
		{"phrase-64KiB-one-word", `LABEL "a" { ~("` + strings.Repeat("abcdefghij", 6500) + `") }`},
		{"phrases-10000", many.String()},
	}
}

// TestFuzzyCompileIsBounded checks that the fuzzy vocabulary (inflections and swaps)
// grows linearly with the phrase words, and that a word too long for the edit index
// gets no variants either: compile work is bounded by size, whatever the phrases.
func TestFuzzyCompileIsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range fuzzyBoundSources(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tc.src, CompileOptions{Limits: bigLimits})
			words := len(p.ac.vocab)
			if got, limit := len(p.fv.ids), words*(1+maxVariants); got > limit {
				t.Errorf("fuzzy vocabulary has %d entries for %d words, want at most %d", got, words, limit)
			}
			if got, limit := editIndexBytes(p.ed), len(p.ed.words)*(maxEditRunes+1)*maxEditRunes*4; got > limit {
				t.Errorf("edit index holds %d bytes of keys, want at most %d", got, limit)
			}
			if tc.name == "phrase-64KiB-one-word" && len(p.fv.ids) != words {
				t.Errorf("a 65,000-letter word got %d variants, want none", len(p.fv.ids)-words)
			}
		})
	}
}

// TestCompoundSplitIsBounded counts the dictionary probes of splitting a token: at
// most maxCompoundLetters*maxPartLetters however the token is made.
func TestCompoundSplitIsBounded(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, `~("idiot")`, CompileOptions{LabelName: "L"})
	tests := []struct {
		token string
		split bool
	}{
		{"youidiot", true},
		{"youareanidiot", true},
		{"idiotyouareyouanidiot", false}, // more than maxCompoundParts words
		{strings.Repeat("a", maxCompoundLetters), false},
		{strings.Repeat("ab", maxCompoundLetters/2), false},
	}
	for _, tc := range tests {
		parts, probes := p.fv.split(tc.token)
		if limit := maxCompoundLetters * maxPartLetters; probes > limit {
			t.Errorf("%q: %d dictionary probes, want at most %d", tc.token, probes, limit)
		}
		if tc.split != slices.Contains(parts, "idiot") || strings.Join(parts, "") != map[bool]string{true: tc.token}[tc.split] {
			t.Errorf("%q split into %q, want a split into words with %q: %v", tc.token, parts, "idiot", tc.split)
		}
	}
}

func BenchmarkCompileFuzzyBound(b *testing.B) {
	for _, tc := range fuzzyBoundSources(b) {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := Compile(tc.src, CompileOptions{Limits: bigLimits}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkFuzzyScan64KiB evaluates 64 KiB of text against 100, 1,000 and 10,000 fuzzy
// phrases: the fuzzy stream's cost (segmentation, fuzzy forms, the fuzzy vocabulary,
// edit distance, compounds, scan) as the phrase count grows.
func BenchmarkFuzzyScan64KiB(b *testing.B) {
	words := benchWords(b)
	all := benchPhrases(words, 10000, 4)
	text := benchText(words, all[:100], 64<<10, 5)
	for _, n := range []int{100, 1000, 10000} {
		var src strings.Builder
		src.WriteString("LABEL \"scan\" {\n")
		for _, ph := range all[:n] {
			fmt.Fprintf(&src, "    ~(%q)\n", ph)
		}
		src.WriteString("}\n")
		p, err := Compile(src.String(), CompileOptions{Limits: bigLimits})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("fuzzy-%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := p.Evaluate(context.Background(), Content{Text: text}, EvalOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkFuzzyNonWords64KiB is the worst case for compound splitting: 64 KiB of
// 20-letter tokens that are no words, against 1,000 fuzzy phrases. "random" tokens
// hold no phrase word, so the cheap containsPhraseWord test turns them away;
// "with-phrase-words" tokens each hold one, so each is tried against the dictionary.
func BenchmarkFuzzyNonWords64KiB(b *testing.B) {
	words := benchWords(b)
	phrases := benchPhrases(words, 1000, 4)
	var src strings.Builder
	src.WriteString("LABEL \"scan\" {\n")
	for _, ph := range phrases {
		fmt.Fprintf(&src, "    ~(%q)\n", ph)
	}
	src.WriteString("}\n")
	p, err := Compile(src.String(), CompileOptions{Limits: bigLimits})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 11))
	for _, variant := range []string{"random", "with-phrase-words"} {
		var text strings.Builder
		for text.Len() < 64<<10 {
			tok := make([]byte, 20)
			for i := range tok {
				tok[i] = byte('a' + r.IntN(26))
			}
			if variant == "with-phrase-words" {
				w := strings.Fields(phrases[r.IntN(len(phrases))])[0]
				copy(tok[r.IntN(20-min(len(w), 19)):], w)
			}
			text.Write(tok)
			text.WriteByte(' ')
		}
		b.Run(variant, func(b *testing.B) {
			b.SetBytes(int64(text.Len()))
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := p.Evaluate(context.Background(), Content{Text: text.String()}, EvalOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		})
	}
}
