package rules

import (
	"context"
	"encoding/hex"
	"math"
	"strings"
	"testing"
)

func eval(t testing.TB, p *Plan, c Content, opts EvalOptions) *Report {
	t.Helper()
	r, err := p.Evaluate(context.Background(), c, opts)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	return r
}

// ruleScore compiles one rule as a label version and returns its score on text.
func ruleScore(t testing.TB, rule, text string, opts EvalOptions) float64 {
	t.Helper()
	p := mustCompile(t, rule, CompileOptions{LabelName: "L"})
	return eval(t, p, Content{Text: text}, opts).Sections[0].Assertions[0].Score
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// Scores of -1 come from QUESTION without a model backend, the one signal that always
// fails on text; that makes the three-valued rules testable without a fake.
const fail = `QUESTION("q?")`

func TestScoringCombinators(t *testing.T) {
	t.Parallel()
	text := "you are an idiot and a loser"
	hit1, hit2, miss := `=("idiot")`, `=("loser")`, `=("genius")`
	tests := []struct {
		name string
		rule string
		want float64
	}{
		{"signal hit", hit1, 1},
		{"signal miss", miss, 0},
		{"NOT hit", "NOT " + hit1, 0},
		{"NOT miss", "NOT " + miss, 1},
		{"NOT fail", "NOT " + fail, -1},
		{"AND is min", hit1 + " AND " + miss, 0},
		{"ALL is min", "ALL(" + hit1 + ", " + hit2 + ")", 1},
		{"OR is max", hit1 + " OR " + miss, 1},
		{"ANY is max", "ANY(" + miss + ", " + hit2 + ")", 1},
		{"NONE is 1-max", "NONE(" + miss + ", " + hit2 + ")", 0},
		{"NONE of misses", "NONE(" + miss + ")", 1},
		{"OR decided by operand >= t despite failure", fail + " OR " + hit1, 1},
		{"OR undecided with failure fails", fail + " OR " + miss, -1},
		{"ANY undecided with failure fails", "ANY(" + miss + ", " + fail + ")", -1},
		{"AND decided by operand < t despite failure", fail + " AND " + miss, 0},
		{"AND undecided with failure fails", fail + " AND " + hit1, -1},
		{"ALL undecided with failure fails", "ALL(" + hit1 + ", " + fail + ")", -1},
		{"NONE with failure and no hit fails", "NONE(" + fail + ", " + miss + ")", -1},
		{"NONE decided by hit", "NONE(" + fail + ", " + hit1 + ")", 0},
		{"precedence", miss + " OR " + hit1 + " AND " + hit2, 1},
		{"nested", "NOT (" + miss + " OR (" + hit1 + " AND NOT " + hit2 + "))", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ruleScore(t, tc.rule, text, EvalOptions{}); !near(got, tc.want) {
				t.Errorf("%s = %v, want %v", tc.rule, got, tc.want)
			}
		})
	}
}

func TestScoringThreshold(t *testing.T) {
	t.Parallel()
	// A 0.8 fuzzy match is TRUE at the default 0.5 and FALSE at 0.9.
	p := mustCompile(t, `~("idiot") AND NOT ~("genius")`, CompileOptions{LabelName: "L"})
	r := eval(t, p, Content{Text: "what an idiiot"}, EvalOptions{})
	if r.Threshold != 0.5 || r.Sections[0].Result != OutcomeTrue {
		t.Fatalf("threshold %v result %s", r.Threshold, r.Sections[0].Result)
	}
	p2 := mustCompile(t, `~("stupid")`, CompileOptions{LabelName: "L"})
	r = eval(t, p2, Content{Text: "you stupit person"}, EvalOptions{Threshold: 0.9})
	if got := r.Sections[0]; !near(got.Score, 0.8) || got.Result != OutcomeFalse {
		t.Errorf("edit-distance match at threshold 0.9: score %v result %s, want 0.8 FALSE", got.Score, got.Result)
	}
	if _, err := p2.Evaluate(context.Background(), Content{Text: "x"}, EvalOptions{Threshold: 1.5}); err == nil {
		t.Error("threshold 1.5 accepted")
	}
}

func TestScoringContext(t *testing.T) {
	t.Parallel()
	filler := strings.Repeat("and then we walked home ", 4) // 20 words, no sentence end
	tests := []struct {
		name, text string
		want       float64
	}{
		{"same sentence", "I will bring a gun to the school tomorrow.", 1},
		{"within 12 words across sentences", "I have a gun. The school is near.", 1},
		{"far apart in one sentence still same sentence", "a gun " + filler + " school", 1},
		{"far apart in different sentences", "A gun. And " + filler + ". School", 0},
		{"one side missing", "I have a gun.", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ruleScore(t, `=("gun") [USED WITH] =("school")`, tc.text, EvalOptions{}); !near(got, tc.want) {
				t.Errorf("score %v, want %v", got, tc.want)
			}
		})
	}
	// min(a, b): a 0.8 fuzzy side caps the condition at 0.8.
	if got := ruleScore(t, `~("shotgun") [NEAR] =("school")`, "my shotgn at school", EvalOptions{}); !near(got, 0.8) {
		t.Errorf("context min = %v, want 0.8", got)
	}
	// A failed side fails the condition unless the other side decides it.
	if got := ruleScore(t, fail+` [ABOUT] =("school")`, "school", EvalOptions{}); got != -1 {
		t.Errorf("failed side with hit = %v, want -1", got)
	}
	if got := ruleScore(t, fail+` [ABOUT] =("school")`, "home", EvalOptions{}); got != 0 {
		t.Errorf("failed side with miss = %v, want 0", got)
	}
}

func TestScoringLabelsExceptionsPriority(t *testing.T) {
	t.Parallel()
	src := `PRIORITY: "Threat" > "Harassment" > "Spam"
LABEL "Threat": "remove" {
    =("kill you")
    ` + fail + `
    EXCEPT WHEN {
        =("song lyrics")
    }
}
SECTION "Harassment": "review" {
    =("idiot")
    =("loser")
}
SECTION "Spam" { =("buy now") }
SECTION "Broken" { ` + fail + ` }
EXCEPT WHEN {
    =("news report")
}
`
	p := mustCompile(t, src, CompileOptions{})
	results := sectionResults
	t.Run("label score is max over rules; failed rule does not hide a TRUE one", func(t *testing.T) {
		r := eval(t, p, Content{Text: "I will kill you"}, EvalOptions{})
		s := r.Sections[0]
		if s.Score != 1 || s.Result != OutcomeTrue || s.Assertions[1].Result != OutcomeFailed {
			t.Errorf("Threat: %+v", s)
		}
		if r.Result != OutcomeTrue || r.LabelMatches["Threat"] != 1 || len(r.LabelMatches) != 1 {
			t.Errorf("report: %s %v", r.Result, r.LabelMatches)
		}
		if len(s.Matches) != 1 || (s.Matches[0] != Span{Start: 7, End: 15}) {
			t.Errorf("matches %v, want [{7 15}] (\"kill you\")", s.Matches)
		}
		if s.Review.Outcome != OutcomeTrue || s.Review.Score != 1 {
			t.Errorf("review %+v", s.Review)
		}
	})
	t.Run("FAILED when the only deciding signal fails", func(t *testing.T) {
		r := eval(t, p, Content{Text: "hello"}, EvalOptions{})
		got := results(r)
		if got["Threat"] != OutcomeFailed || got["Broken"] != OutcomeFailed || got["Harassment"] != OutcomeFalse {
			t.Errorf("results %v", got)
		}
		if r.Result != OutcomeFailed {
			t.Errorf("document result %s, want FAILED (no TRUE, some FAILED)", r.Result)
		}
	})
	t.Run("label exception fires", func(t *testing.T) {
		r := eval(t, p, Content{Text: "song lyrics: I will kill you"}, EvalOptions{})
		s := r.Sections[0]
		if s.Result != OutcomeFalse || s.Score != 1 || s.Exception == nil || s.Exception.Result != OutcomeTrue {
			t.Errorf("Threat with exception: %+v", s)
		}
		if _, ok := r.LabelMatches["Threat"]; ok {
			t.Error("excepted label in labelMatches")
		}
		if s.Exception.Assertions[0].Message != `=("song lyrics")` {
			t.Errorf("exception message %q", s.Exception.Assertions[0].Message)
		}
	})
	t.Run("document exception fires for every label", func(t *testing.T) {
		r := eval(t, p, Content{Text: "news report: idiot says buy now"}, EvalOptions{})
		got := results(r)
		if got["Harassment"] != OutcomeFalse || got["Spam"] != OutcomeFalse || r.Result != OutcomeFalse && r.Result != OutcomeFailed {
			t.Errorf("results %v (%s)", got, r.Result)
		}
		if r.Exception == nil || r.Exception.Result != OutcomeTrue {
			t.Errorf("document exception %+v", r.Exception)
		}
		if h := r.Sections[1]; h.Exception != r.Exception || h.Score != 1 {
			t.Errorf("Harassment should carry the document exception and keep its score: %+v", h)
		}
	})
	t.Run("priority keeps only the highest TRUE label of a chain", func(t *testing.T) {
		r := eval(t, p, Content{Text: "I will kill you, idiot. buy now"}, EvalOptions{})
		got := results(r)
		if got["Threat"] != OutcomeTrue || got["Harassment"] != OutcomeFalse || got["Spam"] != OutcomeFalse {
			t.Errorf("results %v", got)
		}
		if r.Sections[1].Score != 1 {
			t.Errorf("demoted label keeps its score, got %v", r.Sections[1].Score)
		}
		r = eval(t, p, Content{Text: "idiot. buy now"}, EvalOptions{})
		if got := results(r); got["Harassment"] != OutcomeTrue || got["Spam"] != OutcomeFalse {
			t.Errorf("results %v", got)
		}
	})
}

func TestScoringDocumentFalse(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, `=("x")`, CompileOptions{LabelName: "L"})
	if r := eval(t, p, Content{Text: "y"}, EvalOptions{}); r.Result != OutcomeFalse || len(r.LabelMatches) != 0 {
		t.Errorf("%s %v", r.Result, r.LabelMatches)
	}
}

// sectionResults maps a report's sections to their outcomes.
func sectionResults(r *Report) map[string]Outcome {
	m := map[string]Outcome{}
	for _, s := range r.Sections {
		m[s.Name] = s.Result
	}
	return m
}

func TestScoringExactFuzzy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule, text string
		want       float64
	}{
		// exact: whole words, normalised case and width, never inside a word
		{`=("kill")`, "I will KILL", 1},
		{`=("kill")`, "skill", 0},
		{`=("kill")`, "killer", 0},
		{`=("kill you")`, "kill, you", 1},
		{`=("kill you")`, "kill. You", 0},
		{`=("you're dead")`, "you’re dead", 1},
		{`=("kill")`, "ｋｉｌｌ", 1},
		{`=("kill")`, "k1ll", 0},
		{`=("杀了你")`, "我要杀了你", 1},
		{`=("🔪")`, "watch out 🔪🔪", 1},
		{`=("mr. smith")`, "ask Mr. Smith", 1},
		// fuzzy: each obfuscation docs/rules.md#matching lists
		{`~("kill")`, "kíll", 1},       // diacritics
		{`~("kill")`, "кill", 1},       // Cyrillic confusable
		{`~("kill")`, "k1ll", 1},       // leetspeak digit
		{`~("kill")`, "ki11", 1},       // 1 for l
		{`~("shit")`, "sh!t", 1},       // leetspeak symbol
		{`~("shit")`, "$hit", 1},       // leading symbol
		{`~("kill")`, "k.i.l.l", 1},    // separators
		{`~("kill")`, "k i l l", 1},    // spaced letters
		{`~("kill")`, "k-i-l-l", 1},    // hyphens
		{`~("kill")`, "kiiiilllll", 1}, // repeated letters
		{`~("kill")`, "KILL", 1},
		{`~("idiot")`, "1d10t", 1},
		{`~("kill yourself")`, "k1ll   yourself", 1},
		// edit distance 1 on 5+ letters scores 0.8
		{`~("loser")`, "lozer", 0.8},
		{`~("loser")`, "losr", 0.8},
		{`~("idiot")`, "idoit", 0.8},  // adjacent swap
		{`~("stupid")`, "stuupid", 1}, // repeated letter, not an edit
		// false positives that must not happen
		{`~("kill")`, "skill", 0},   // Scunthorpe
		{`~("kill")`, "killjoy", 0}, // a longer word, not an inflection
		{`~("ass")`, "class assessment", 0},
		{`~("loser")`, "lover", 0},      // correctly spelled word at distance 1
		{`~("loser")`, "looser", 0},     // correctly spelled word after collapsing
		{`~("kill")`, "kiln", 0},        // 4 letters: no edit distance
		{`~("loser")`, "l0ver", 0},      // a dictionary word under leetspeak
		{`~("loser")`, "🅻🅾🆅🅴🆁", 0},      // and under styled letters
		{`~("idiot")`, "idiotic", 0},    // a dictionary word is never an edit
		{`~("rape")`, "rapper", 0},      // collapses to "raper", but is spelled as another word
		{`~("ass")`, "assess", 0},       // collapses to "ases", like "asses"
		{`~("kill")`, "Kilkenny", 0},    // "kil" is not "kill", though both collapse to "kil"
		{`~("sex")`, "in Middlesex", 0}, // a name inside a sentence is not split
		// the later families of docs/rules.md#matching: invisible characters, styled letters, inflections,
		// swaps on 4-letter words, words run together
		{`~("kill")`, "ki\u200bll", 1},
		{`~("kill")`, "k\u00adi\u00adl\u00adl", 1},
		{`~("kill")`, "⒦⒤⒧⒧", 1},
		{`~("kill")`, "🇰🇮🇱🇱", 1},
		{`~("kill")`, "🅺 🅸 🅻 🅻", 1},
		{`~("idiot")`, "idiots", 1},
		{`~("idiot")`, "IDIOTS!!!", 1},
		{`~("kill")`, "killer", 1},
		{`~("hate")`, "hating", 1},
		{`~("assault")`, "two assaults", 1},
		{`=("idiot")`, "idiots", 0}, // inflections are fuzzy only
		{`~("kill")`, "klil", 0.8},
		{`~("hate")`, "haet", 0}, // the shipped list has "haet" (Scots: a whit)
		{`~("idiot")`, "idoits", 0.8},
		{`~("idiot")`, "youidiot", 1},
		{`~("i hate you")`, "ihateyou", 1},
		{`~("kill")`, "skillz", 0}, // "s" is not a word
		{`~("kys")`, "k y", 0},     // two letters are not a spaced word
		{`~("kys")`, "k y s", 1},   // three are
	}
	for _, tc := range tests {
		t.Run(tc.rule+" "+tc.text, func(t *testing.T) {
			t.Parallel()
			if got := ruleScore(t, tc.rule, tc.text, EvalOptions{}); !near(got, tc.want) {
				t.Errorf("%s on %q = %v, want %v", tc.rule, tc.text, got, tc.want)
			}
		})
	}
}

func TestScoringRegexSentimentConcept(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule, text string
		want       float64
		cmp        string // "=", ">", "<"
	}{
		{`REGEX("(?i)\bloser{2,}\b")`, "what a LOSERRR", 1, "="},
		{`REGEX("(?i)\bloser{2,}\b")`, "loser", 0, "="},
		{`REGEX("x*")`, "abc", 0, "="}, // empty matches say nothing
		{`SENTIMENT("negative")`, "I hate you, you are horrible and disgusting.", 0.5, ">"},
		{`SENTIMENT("negative")`, "What a lovely day, thank you so much!", 0.1, "<"},
		{`SENTIMENT("positive")`, "What a lovely day, thank you so much!", 0.5, ">"},
		{`SENTIMENT("neutral")`, "The train leaves at nine.", 0.9, ">"},
		{`SENTIMENT("negative")`, "Nice weather. I hate you, you are horrible. See you.", 0.5, ">"},
		{`"threat of violence"`, "I will kill you", 1, "="},
		{`"threat of violence"`, "I will bake you a cake", 0.5, "<"},
		{`"self-harm"`, "I want to die", 0.5, ">"},
		{`"drugs"`, "selling cheap xanax and weed", 1, "="},
		{`"personal data"`, "here is her home address and phone number", 1, "="},
		{`"weapons"`, "bring a machete", 1, "="},
		{`"hate speech"`, "those people are vermin", 0.5, "="},
	}
	for _, tc := range tests {
		t.Run(tc.rule+" "+tc.text, func(t *testing.T) {
			t.Parallel()
			got := ruleScore(t, tc.rule, tc.text, EvalOptions{})
			ok := map[string]bool{"=": near(got, tc.want), ">": got > tc.want, "<": got < tc.want && got >= 0}[tc.cmp]
			if !ok {
				t.Errorf("%s on %q = %v, want %s %v", tc.rule, tc.text, got, tc.cmp, tc.want)
			}
		})
	}
	// The built-in concept is honest about being lexical.
	p := mustCompile(t, `"insult" OR =("x")`, CompileOptions{LabelName: "L"})
	if msg := eval(t, p, Content{Text: "idiot"}, EvalOptions{}).Sections[0].Assertions[0].Message; msg != `"insult" OR =("x") (lexical match)` {
		t.Errorf("message %q", msg)
	}
	if got := ruleScore(t, `QUESTION("Is this a threat?")`, "I will kill you", EvalOptions{}); got != -1 {
		t.Errorf("QUESTION without backend = %v, want -1", got)
	}
}

func pdqHex(b [32]byte) string { return hex.EncodeToString(b[:]) }

func TestScoringHashAndImages(t *testing.T) {
	t.Parallel()
	var ref [32]byte
	for i := range ref {
		ref[i] = byte(i * 7)
	}
	flip := func(n int) [32]byte { // ref with n bits flipped
		x := ref
		for i := 0; i < n; i++ {
			x[i/8] ^= 1 << (i % 8)
		}
		return x
	}
	p := mustCompile(t, `HASH("pdq:`+pdqHex(ref)+`")
HASH("pdq:`+pdqHex(ref)+`", 10)
HASH("md5:d41d8cd98f00b204e9800998ecf8427e")
HASH("SHA1:da39a3ee5e6b4b0d3255bfef95601890afd80709")
=("hello")
"violence"
SENTIMENT("negative")
QUESTION("is it?")`, CompileOptions{LabelName: "L"})
	scores := func(c Content) []float64 {
		r := eval(t, p, c, EvalOptions{})
		var out []float64
		for _, a := range r.Sections[0].Assertions {
			out = append(out, a.Score)
		}
		return out
	}
	tests := []struct {
		name string
		c    Content
		want []float64
	}{
		{"identical", Content{Image: &ImageFeatures{PDQ: ref, HasPDQ: true}}, []float64{1, 1, -1, -1, -1, -1, -1, -1}},
		{"distance 10", Content{Image: &ImageFeatures{PDQ: flip(10), HasPDQ: true}}, []float64{1 - 10.0/62, 0.5, -1, -1, -1, -1, -1, -1}},
		{"distance 31 (default max)", Content{Image: &ImageFeatures{PDQ: flip(31), HasPDQ: true}}, []float64{0.5, 0, -1, -1, -1, -1, -1, -1}},
		{"distance 32", Content{Image: &ImageFeatures{PDQ: flip(32), HasPDQ: true}}, []float64{0, 0, -1, -1, -1, -1, -1, -1}},
		{"md5 and sha1 equality, any case", Content{Image: &ImageFeatures{MD5: "D41D8CD98F00B204E9800998ECF8427E", SHA1: "da39a3ee5e6b4b0d3255bfef95601890afd80709"}}, []float64{-1, -1, 1, 1, -1, -1, -1, -1}},
		{"md5 differs", Content{Image: &ImageFeatures{MD5: "00", SHA1: "11"}}, []float64{-1, -1, 0, 0, -1, -1, -1, -1}},
		{"image with OCR text", Content{Text: "hello", Image: &ImageFeatures{PDQ: ref, HasPDQ: true}}, []float64{1, 1, -1, -1, 1, 0, 0, -1}},
		{"text has no hashes", Content{Text: "hello"}, []float64{-1, -1, -1, -1, 1, 0, 0, -1}},
	}
	for _, tc := range tests {
		got := scores(tc.c)
		for i := range tc.want {
			if !near(got[i], tc.want[i]) {
				t.Errorf("%s: scores %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}
