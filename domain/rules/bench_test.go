package rules

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// benchWords is a deterministic slice of real English words to build phrases and text.
func benchWords(tb testing.TB) []string {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(englishWordsGz))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		w := sc.Text()
		if len(w) >= 4 && len(w) <= 9 && !strings.ContainsAny(w, "'-") {
			out = append(out, w)
		}
	}
	return out
}

// benchPhrases returns n distinct two-word phrases.
func benchPhrases(words []string, n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		p := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// benchText is size bytes of prose-like text of common words with some phrases mixed in,
// so the automaton reports matches as it would on real content.
func benchText(words, phrases []string, size int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 2))
	common := strings.Fields("the a of and to in is you that it he was for on are as with his they I at be this have from or one had by word but not what all were we when your can said there use an each which she do how their if will up other about out many then them these so some her would make like him into time has look two more write go see number no way could people my than first water been call who oil its now find long down day did get come made may part")
	var b strings.Builder
	b.Grow(size + 64)
	n := 0
	for b.Len() < size {
		switch {
		case n%97 == 96 && len(phrases) > 0:
			b.WriteString(phrases[r.IntN(len(phrases))])
		case r.IntN(4) == 0:
			b.WriteString(words[r.IntN(len(words))])
		default:
			b.WriteString(common[r.IntN(len(common))])
		}
		n++
		if n%15 == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:size]
}

// benchGroupedPolicy is the idiomatic way to write a phrase-heavy policy: each rule is an
// ANY list of per-topic phrases.
func benchGroupedPolicy(labels, rulesPerLabel, perList int, phrases []string) string {
	var b strings.Builder
	k := 0
	for l := 0; l < labels; l++ {
		fmt.Fprintf(&b, "LABEL \"label %d\": \"review\" {\n", l)
		for r := 0; r < rulesPerLabel; r++ {
			b.WriteString("    ANY(")
			for i := 0; i < perList; i++ {
				if i > 0 {
					b.WriteString(", ")
				}
				if k%2 == 0 {
					fmt.Fprintf(&b, "=(%q)", phrases[k%len(phrases)])
				} else {
					fmt.Fprintf(&b, "~(%q)", phrases[k%len(phrases)])
				}
				k++
			}
			b.WriteString(")\n")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

func benchPolicy(labels, rulesPerLabel int, phrases []string, mixed bool) string {
	var b strings.Builder
	k := 0
	for l := 0; l < labels; l++ {
		fmt.Fprintf(&b, "LABEL \"label %d\": \"review\" {\n", l)
		for r := 0; r < rulesPerLabel; r++ {
			p := phrases[k%len(phrases)]
			k++
			switch {
			case mixed && r == 7:
				fmt.Fprintf(&b, "    %q\n", p)
			case mixed && r == 8:
				fmt.Fprintf(&b, "    REGEX(\"(?i)\\\\b%s\\\\b\")\n", strings.ReplaceAll(p, " ", `\\s+`))
			case mixed && r == 9:
				fmt.Fprintf(&b, "    ~(%q) AND SENTIMENT(\"negative\")\n", p)
			case r%2 == 0:
				fmt.Fprintf(&b, "    =(%q)\n", p)
			default:
				fmt.Fprintf(&b, "    ~(%q)\n", p)
			}
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// reportCPU adds the process CPU time per operation (GC included) as "cpu-ns/op".
func reportCPU(b *testing.B, cpu0 int64) {
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
	}
}

var bigLimits = Limits{MaxTextBytes: 4 << 20, MaxSignals: 50000, MaxRules: 50000, MaxRegexInsts: 1 << 20}

func BenchmarkCompile200Labels2000Signals(b *testing.B) {
	words := benchWords(b)
	src := benchPolicy(200, 10, benchPhrases(words, 2000, 1), true)
	p, err := Compile(src, CompileOptions{Limits: bigLimits})
	if err != nil {
		b.Fatal(err)
	}
	if p.written != 2000+200 { // 10 rules per label, one of them with two signals
		b.Logf("signals as written: %d", p.written)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := Compile(src, CompileOptions{Limits: bigLimits}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

// BenchmarkEvaluate20Labels1000Phrases1KiB evaluates 1 KiB of text against 20 labels
// holding 1,000 exact and fuzzy phrases. "grouped" writes them as a policy author would,
// 5 ANY lists of 10 phrases per label (100 assertions in the report); "one-per-rule"
// puts each phrase on its own rule line (1,000 assertions), the worst case for report
// building.
func BenchmarkEvaluate20Labels1000Phrases1KiB(b *testing.B) {
	words := benchWords(b)
	phrases := benchPhrases(words, 1000, 2)
	for _, tc := range []struct{ name, src string }{
		{"grouped", benchGroupedPolicy(20, 5, 10, phrases)},
		{"one-per-rule", benchPolicy(20, 50, phrases, false)},
	} {
		b.Run(tc.name, func(b *testing.B) { benchEvaluate(b, tc.src, words, phrases) })
	}
}

func benchEvaluate(b *testing.B, src string, words, phrases []string) {
	p, err := Compile(src, CompileOptions{Limits: bigLimits})
	if err != nil {
		b.Fatal(err)
	}
	text := benchText(words, phrases, 1024, 3)
	ctx := context.Background()
	if _, err := p.Evaluate(ctx, Content{Text: text}, EvalOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := p.Evaluate(ctx, Content{Text: text}, EvalOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}

// BenchmarkScan1MiB measures the multi-pattern scan alone (the automaton over the
// normalised stream), against Go's regexp with the same phrases as one alternation over
// the same bytes. The "pipeline" cases add normalisation and segmentation (the whole
// Evaluate) for an honest end-to-end figure.
func BenchmarkScan1MiB(b *testing.B) {
	words := benchWords(b)
	all := benchPhrases(words, 10000, 4)
	text := benchText(words, all[:100], 1<<20, 5)
	for _, n := range []int{100, 1000, 10000} {
		phrases := all[:n]
		var src strings.Builder
		src.WriteString("LABEL \"scan\" {\n")
		for _, ph := range phrases {
			fmt.Fprintf(&src, "    =(%q)\n", ph)
		}
		src.WriteString("}\n")
		p, err := Compile(src.String(), CompileOptions{Limits: bigLimits})
		if err != nil {
			b.Fatal(err)
		}
		words := analyse(text, false).exactWords()
		stream := []byte(strings.Join(words, " "))
		b.Run(fmt.Sprintf("automaton-%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			ids := make([]uint32, 0, len(words))
			cpu0 := processCPU()
			for b.Loop() {
				ids = ids[:0]
				for _, w := range words {
					ids = p.ac.ids(ids, w)
				}
				p.ac.scan(ids, func(int, int, int) {})
			}
			reportCPU(b, cpu0)
		})
		if n == 1000 {
			quoted := make([]string, len(phrases))
			for i, ph := range phrases {
				quoted[i] = regexp.QuoteMeta(ph)
			}
			re := regexp.MustCompile(`(?:` + strings.Join(quoted, "|") + `)`)
			b.Run(fmt.Sprintf("regexp-%d", n), func(b *testing.B) {
				b.SetBytes(int64(len(stream)))
				cpu0 := processCPU()
				for b.Loop() {
					re.FindAllIndex(stream, -1)
				}
				reportCPU(b, cpu0)
			})
			b.Run(fmt.Sprintf("pipeline-%d", n), func(b *testing.B) {
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
}
