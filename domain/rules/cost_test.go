package rules

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"sync/atomic"
	"testing"
)

// wordAlternation is the REGEX a review found too costly: about size bytes of
// "(w1|w2|...)" over real words in random order, so the parser cannot factor the
// branches into a trie and the NFA keeps one thread per branch alive.
func wordAlternation(words []string, size int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 3))
	var b strings.Builder
	b.WriteByte('(')
	for b.Len() < size {
		if b.Len() > 1 {
			b.WriteByte('|')
		}
		b.WriteString(words[r.IntN(len(words))])
	}
	b.WriteByte(')')
	return b.String()
}

func regexInsts(tb testing.TB, expr string) int {
	tb.Helper()
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		tb.Fatal(err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		tb.Fatal(err)
	}
	return len(prog.Inst)
}

func TestCompileBoundsRegexCost(t *testing.T) {
	t.Parallel()
	big := wordAlternation(benchWords(t), 57<<10, 1)
	small := `(?i)\bl+o+s+e+r{2,}\b`
	n := regexInsts(t, small)
	// Different small REGEX, one a line, until they pass the limit together.
	var many strings.Builder
	many.WriteString("LABEL \"a\" {\n")
	overLine := 0
	for i, total := 0, 0; total <= DefaultLimits.MaxRegexInsts; i++ {
		expr := fmt.Sprintf("%s%03d", small, i)
		total += regexInsts(t, expr)
		fmt.Fprintf(&many, "  REGEX(\"%s\")\n", strings.ReplaceAll(expr, `\`, `\\`))
		overLine = i + 2
	}
	many.WriteString("}\n")
	tests := []struct {
		name string
		src  string
		opts CompileOptions
		want []wantErr // nil: compiles
	}{
		{"the issue's 57 KiB alternation", "LABEL \"a\" {\n  =(\"x\")\n  REGEX(\"" + big + "\")\n}",
			CompileOptions{Limits: Limits{MaxTextBytes: 1 << 20}},
			[]wantErr{{3, 3, fmt.Sprintf("REGEX is too costly to match: it compiles to %d instructions, more than the limit of 500", regexInsts(t, big))}}},
		{"one REGEX over a lowered limit", "LABEL \"a\" { REGEX(\"" + strings.ReplaceAll(small, `\`, `\\`) + "\") }",
			CompileOptions{Limits: Limits{MaxRegexInsts: n - 1}}, []wantErr{{1, 13, fmt.Sprintf("more than the limit of %d", n-1)}}},
		{"one REGEX at a lowered limit", "LABEL \"a\" { REGEX(\"" + strings.ReplaceAll(small, `\`, `\\`) + "\") }",
			CompileOptions{Limits: Limits{MaxRegexInsts: n}}, nil},
		{"small REGEX over the limit together", many.String(), CompileOptions{},
			[]wantErr{{overLine, 3, "REGEX signals are too costly to match together"}}},
		{"a repeated REGEX is counted once", strings.Repeat("LABEL \"a\" {\n  REGEX(\"https?://\\\\S+\")\n}\n", 1) +
			"LABEL \"b\" {\n" + strings.Repeat("  REGEX(\"https?://\\\\S+\")\n", 1000) + "}\n",
			CompileOptions{Limits: Limits{MaxRegexInsts: regexInsts(t, `https?://\S+`)}}, nil},
		{"the golden policy's REGEX", "LABEL \"a\" {\n  REGEX(\"(?i)\\\\bl+o+s+e+r{2,}\\\\b\")\n  REGEX(\"https?://\\\\S+\")\n  REGEX(\"\\\\d{3}-\\\\d{4}\")\n}",
			CompileOptions{}, nil},
		{"invalid REGEX still reported as such", "LABEL \"a\" {\n    REGEX(\"a(b\")\n}", CompileOptions{},
			[]wantErr{{2, 5, "invalid REGEX: missing closing ): `a(b`"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compile(tc.src, tc.opts)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			var ce *CompileErrors
			if !errors.As(err, &ce) {
				t.Fatalf("Compile error = %v, want *CompileErrors", err)
			}
			if len(ce.Errors) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d", len(ce.Errors), ce.Errors, len(tc.want))
			}
			for i, w := range tc.want {
				g := ce.Errors[i]
				if g.Line != w.line || g.Column != w.col || !strings.Contains(g.Message, w.msg) {
					t.Errorf("error %d = %d:%d %q, want %d:%d containing %q", i, g.Line, g.Column, g.Message, w.line, w.col, w.msg)
				}
			}
		})
	}
}

// editIndexBytes is what the edit-distance index of a plan stores: its deletion keys.
func editIndexBytes(e *editIndex) int {
	n := 0
	for k := range e.dels {
		n += len(k)
	}
	return n
}

// TestLongFuzzyPhraseCompileIsBounded covers a review finding: the edit-distance
// index stored every one-rune deletion of each fuzzy phrase word, quadratic in the
// word, so one 60,000-letter word took gigabytes and tens of seconds.
func TestLongFuzzyPhraseCompileIsBounded(t *testing.T) {
	t.Parallel()
	// The bound of one word: itself and each deletion, at most 4 bytes a rune.
	perWord := (maxEditRunes + 1) * maxEditRunes * 4
	tests := []struct {
		name    string
		phrase  string
		indexed int // words in the edit index
	}{
		{"ordinary word", "killer", 1},
		{"longest indexed word", strings.Repeat("abcdefgh", maxEditRunes/8), 1},
		{"one rune too long", strings.Repeat("abcdefgh", maxEditRunes/8) + "x", 0},
		{"the issue's 60,000 letters", strings.Repeat("abcdefghij", 6000), 0},
		{"leetspeak 60,000 characters", strings.Repeat("a1", 30000), 0},
		{"many long words", strings.Repeat(strings.Repeat("abcdefghij", 200)+" ", 30), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, `LABEL "a" { ~("`+tc.phrase+`") }`, CompileOptions{})
			if got := len(p.ed.words); got != tc.indexed {
				t.Errorf("%d words indexed for edit distance, want %d", got, tc.indexed)
			}
			if got, limit := editIndexBytes(p.ed), tc.indexed*perWord; got > limit {
				t.Errorf("edit index holds %d bytes of keys, want at most %d", got, limit)
			}
		})
	}
	// Words too long for the index still match, exactly and fuzzily.
	long := strings.Repeat("abcdefghij", 10)
	p := mustCompile(t, `LABEL "a" { ~("`+long+`") }`, CompileOptions{LabelName: "L"})
	if s := eval(t, p, Content{Text: "say " + strings.ToUpper(long) + "!"}, EvalOptions{}).Sections[0].Score; s != 1 {
		t.Errorf("long fuzzy word scored %v, want 1", s)
	}
}

// TestEditLookupSkipsLongTokens checks that a content token too long to be one edit
// from any indexed word is not looked up: the lookup is quadratic in the token, and a
// 256 KiB text may be one token. The lookup's scratch buffer is its one allocation,
// so none means it was skipped.
func TestEditLookupSkipsLongTokens(t *testing.T) {
	p := mustCompile(t, `LABEL "a" { ~("killer") }`, CompileOptions{})
	tests := []struct {
		name   string
		token  string
		lookup bool
	}{
		// "killer" is indexed as its fuzzy form "kiler".
		{"one edit away", "kilxer", true},
		{"one rune longer than the longest word", "kilerx", true},
		{"two runes longer", "kilerxy", false},
		{"a 20,000-letter token", strings.Repeat("qwertyuiop", 2000), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			toks := []ftoken{{norm: tc.token, form: tc.token}}
			allocs := testing.AllocsPerRun(10, func() {
				toks[0].form, toks[0].approx, toks[0].id = tc.token, false, 0
				p.ed.apply(toks, p.ac)
			})
			if got := allocs > 0; got != tc.lookup {
				t.Errorf("looked up: %v (%v allocations), want %v", got, allocs, tc.lookup)
			}
		})
	}
}

// countdownCtx is a context whose Err turns to Canceled on its n-th call, to stop an
// evaluation at each of its checks in turn.
type countdownCtx struct {
	context.Context
	left  atomic.Int64
	calls atomic.Int64
}

func newCountdown(n int64) *countdownCtx {
	c := &countdownCtx{Context: context.Background()}
	c.left.Store(n)
	return c
}

func (c *countdownCtx) Err() error {
	c.calls.Add(1)
	if c.left.Add(-1) <= 0 {
		return context.Canceled
	}
	return nil
}

// evalChecks counts the context checks of one evaluation of a plan with the given
// numbers of REGEX signals and context conditions.
func evalChecks(t *testing.T, regexes, contexts int) (*Plan, int64) {
	t.Helper()
	var src strings.Builder
	src.WriteString("LABEL \"a\" {\n")
	for i := range regexes {
		fmt.Fprintf(&src, "  REGEX(\"%c+\")\n", 'a'+i)
	}
	for i := range contexts {
		fmt.Fprintf(&src, "  \"x\" [NEAR] \"y%d\"\n", i)
	}
	src.WriteString("  =(\"x\")\n}\n")
	p := mustCompile(t, src.String(), CompileOptions{})
	probe := newCountdown(1 << 30)
	if _, err := p.Evaluate(probe, Content{Text: evalText}, EvalOptions{}); err != nil {
		t.Fatal(err)
	}
	return p, probe.calls.Load()
}

const evalText = "aaa bbb ccc ddd eee fff x y0 y1 y2"

func TestEvaluateStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	p, checks := evalChecks(t, 3, 2)
	// Evaluate checks its context between REGEX signals and between context
	// conditions, the stages whose number the policy decides.
	if _, more := evalChecks(t, 6, 2); more-checks != 3 {
		t.Errorf("three more REGEX signals make %d more context checks, want 3", more-checks)
	}
	if _, more := evalChecks(t, 3, 4); more-checks != 2 {
		t.Errorf("two more context conditions make %d more context checks, want 2", more-checks)
	}
	text := evalText
	for n := int64(1); n <= checks; n++ {
		t.Run(fmt.Sprintf("cancelled at check %d", n), func(t *testing.T) {
			t.Parallel()
			rep, err := p.Evaluate(newCountdown(n), Content{Text: text}, EvalOptions{})
			if !errors.Is(err, context.Canceled) || rep != nil {
				t.Fatalf("Evaluate = %v, %v; want no report and context.Canceled", rep != nil, err)
			}
		})
	}
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		<-ctx.Done()
		if _, err := p.Evaluate(ctx, Content{Text: text}, EvalOptions{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

// BenchmarkRegexCost reproduces that costly REGEX and measures the worst REGEX cost
// the compile-time limit allows. The 57 KiB alternation is now a compile
// error; it runs here over 4 KiB with the limit lifted, and "s/256KiB" extrapolates
// to the largest job text (matching is linear in the text). The other cases are
// at the limit, over a 256 KiB text, through Evaluate.
func BenchmarkRegexCost(b *testing.B) {
	words := benchWords(b)
	prose := benchText(words, nil, 256<<10, 7)
	letters := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 256<<10/26)
	// The alternation that fills the limit: grow it word by word.
	atLimit := ""
	for n := 8; ; n += 8 {
		expr := wordAlternation(words, n, 2)
		if regexInsts(b, expr) > DefaultLimits.MaxRegexInsts {
			break
		}
		atLimit = expr
	}
	tests := []struct {
		name, expr, text string
	}{
		{"issue-57KiB-alternation-4KiB-text", wordAlternation(words, 57<<10, 1), prose[:4<<10]},
		{"limit-word-alternation-256KiB", atLimit, prose},
		{"limit-letter-class-256KiB", fmt.Sprintf(`\pL{%d}`, DefaultLimits.MaxRegexInsts-2), letters},
		{"golden-regexes-256KiB", `(?i)\bl+o+s+e+r{2,}\b|https?://\S+|\d{3}-\d{4}`, prose},
	}
	for _, tc := range tests {
		p, err := Compile(`LABEL "a" { REGEX("`+strings.ReplaceAll(tc.expr, `\`, `\\`)+`") }`,
			CompileOptions{Limits: Limits{MaxTextBytes: 1 << 20, MaxRegexInsts: 1 << 20}})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := p.Evaluate(context.Background(), Content{Text: tc.text}, EvalOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
			perByte := float64(processCPU()-cpu0) / float64(b.N) / float64(len(tc.text))
			b.ReportMetric(perByte*(256<<10)/1e9, "cpu-s/256KiB")
			b.ReportMetric(float64(regexInsts(b, tc.expr)), "insts")
		})
	}
}

// BenchmarkCompileLongFuzzyPhrase is that review finding: a fuzzy phrase of one
// 60,000-character word. Before the edit index bounded its words, these took 20 s
// and 69 s per compile.
func BenchmarkCompileLongFuzzyPhrase(b *testing.B) {
	for _, tc := range []struct{ name, phrase string }{
		{"letters-60000", strings.Repeat("abcdefghij", 6000)},
		{"leet-60000", strings.Repeat("a1", 30000)},
		{"words-60000", strings.Repeat("abcdefghij ", 5454)},
	} {
		src := `LABEL "a" { ~("` + tc.phrase + `") }`
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if _, err := Compile(src, CompileOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkEvaluateLongFuzzyPhrase scores a 10,000-word fuzzy phrase on a text that
// repeats it four times: about 15,000 matches, each as long as the phrase.
func BenchmarkEvaluateLongFuzzyPhrase(b *testing.B) {
	phrase := strings.Repeat("abcde fghij ", 5000)
	p, err := Compile(`LABEL "a" { ~("`+phrase+`") }`, CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat(phrase, 4)
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := p.Evaluate(context.Background(), Content{Text: text}, EvalOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
}

func TestSaturated(t *testing.T) {
	t.Parallel()
	full := sigResult{score: 1, occ: make([]occurrence, maxOccurrences)}
	tests := []struct {
		name string
		sig  []sigResult
		want bool
	}{
		{"all full at score 1", []sigResult{full, full}, true},
		{"one with room for occurrences", []sigResult{full, {score: 1, occ: make([]occurrence, maxOccurrences-1)}}, false},
		{"one below the top score", []sigResult{full, {score: 0.8, occ: make([]occurrence, maxOccurrences)}}, false},
	}
	for _, tc := range tests {
		st := &evalState{sig: tc.sig}
		if got := st.saturated([]fuzzyRef{{sig: 0}, {sig: 1}}); got != tc.want {
			t.Errorf("%s: saturated = %v, want %v", tc.name, got, tc.want)
		}
	}
}
