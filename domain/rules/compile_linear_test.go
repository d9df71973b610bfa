package rules

import (
	"strings"
	"testing"
)

// longRuleSources are rule texts of about size bytes made of one long run of letters,
// which the tokenizer's pre-tokenizer keeps as a single piece: in a fuzzy phrase, in an
// exact phrase and in a comment.
func longRuleSources(size int) []struct{ name, src string } {
	letters := strings.Repeat("abcdefghij", size/10+1)[:size-32]
	return []struct{ name, src string }{
		{"fuzzy", `LABEL "a" { ~("` + letters + `") }`},
		{"exact", `LABEL "a" { =("` + letters + `") }`},
		{"comment", "LABEL \"a\" { =(\"x\") }\n// " + letters},
	}
}

// TestTokenCountingIsNearLinear compares the merge work of counting the tokens of
// 8 KiB and 64 KiB rule texts: eight times the text may cost eight times the work and
// a logarithmic factor, not the sixty-four times that rescanning a piece after each
// merge cost (seconds for one 64 KiB word).
func TestTokenCountingIsNearLinear(t *testing.T) {
	t.Parallel()
	e, err := encoder()
	if err != nil {
		t.Fatal(err)
	}
	small, large := longRuleSources(8<<10), longRuleSources(64<<10)
	for i := range small {
		t.Run(small[i].name, func(t *testing.T) {
			t.Parallel()
			_, w8 := e.countWork(small[i].src)
			_, w64 := e.countWork(large[i].src)
			if ratio := float64(w64) / float64(w8); ratio > 8*1.5 {
				t.Errorf("counting 64 KiB took %d steps, 8 KiB %d: %.1f times, want near 8", w64, w8, ratio)
			}
		})
	}
}

// BenchmarkCompileLongRuleText compiles 64 KiB rule texts of one long word, with and
// without the token counts a version reports.
func BenchmarkCompileLongRuleText(b *testing.B) {
	Warm()
	for _, tc := range longRuleSources(64 << 10) {
		for _, stats := range []bool{false, true} {
			name := tc.name
			if stats {
				name += "-with-token-counts"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					p, err := Compile(tc.src, CompileOptions{})
					if err != nil {
						b.Fatal(err)
					}
					if stats {
						p.Stats()
					}
				}
				reportCPU(b, cpu0)
			})
		}
	}
}

// BenchmarkCountTokensProse counts the tokens of 64 KiB of ordinary prose, whose
// pieces are short words: the common case the linear merge must not slow down.
func BenchmarkCountTokensProse(b *testing.B) {
	Warm()
	text := benchText(benchWords(b), nil, 64<<10, 3)
	cpu0 := processCPU()
	for b.Loop() {
		CountTokens(text)
	}
	reportCPU(b, cpu0)
}
