package rules

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// span is a flagged span as a test writes it: code-point offsets and the text.
type span struct {
	start, end int
	text       string
}

func spansOf(as AssertionReport) []span {
	var out []span
	for _, s := range as.FlaggedSpans() {
		out = append(out, span{s.Start, s.End, s.Text})
	}
	return out
}

// checkSpans asserts the invariant clients rely on: every span of the report
// slices the evaluated text, counted in code points, to exactly its Text.
func checkSpans(t testing.TB, r *Report, text string) {
	t.Helper()
	if !utf8.ValidString(text) {
		return // the API refuses invalid UTF-8; code points of it are not defined
	}
	runes := []rune(text)
	total, bytes := 0, 0
	check := func(as []AssertionReport) {
		for _, a := range as {
			spans := a.FlaggedSpans()
			if len(spans) > MaxSpansPerAssertion {
				t.Fatalf("%d spans on %q", len(spans), a.Message)
			}
			if len(spans) > 0 && a.Result != OutcomeTrue {
				t.Fatalf("spans on %s assertion %q", a.Result, a.Message)
			}
			for i, s := range spans {
				if s.Start < 0 || s.End > len(runes) || s.Start >= s.End {
					t.Fatalf("span %+v outside text of %d code points", s, len(runes))
				}
				if got := string(runes[s.Start:s.End]); got != s.Text {
					t.Fatalf("span [%d,%d) slices %q, its text is %q (text %q)", s.Start, s.End, got, s.Text, text)
				}
				if i > 0 && (s.Start < spans[i-1].Start || s.Start == spans[i-1].Start && s.End <= spans[i-1].End) {
					t.Fatalf("spans of %q out of order: %+v", a.Message, spans)
				}
				total++
				bytes += len(s.Text)
			}
		}
	}
	seen := map[*ExceptionReport]bool{}
	exc := func(e *ExceptionReport) {
		if e != nil && !seen[e] {
			seen[e] = true
			check(e.Assertions)
		}
	}
	exc(r.Exception)
	for _, s := range r.Sections {
		check(s.Assertions)
		exc(s.Exception)
	}
	if total > MaxSpansPerReport || bytes > MaxSpanTextBytes {
		t.Fatalf("%d spans of %d bytes in one report", total, bytes)
	}
}

func TestFlaggedSpans(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rule, text string
		want             []span
	}{
		{"exact ASCII", `=("kill")`, "I will kill you", []span{{7, 11, "kill"}}},
		{"exact phrase", `=("will kill you")`, "I will kill you!", []span{{2, 15, "will kill you"}}},
		{"after an emoji", `=("kill")`, "😀😀 kill", []span{{3, 7, "kill"}}},
		{"after a ZWJ sequence", `=("kill")`, "👩‍👩‍👧 kill", []span{{6, 10, "kill"}}},
		{"after combining marks", `=("kill")`, "e\u0301a\u0308 kill", []span{{5, 9, "kill"}}},
		{"with combining marks", `~("kill")`, "k\u0301i\u0308ll now", []span{{0, 6, "k\u0301i\u0308ll"}}},
		{"CJK", `=("杀了你")`, "我要杀了你。", []span{{2, 5, "杀了你"}}},
		{"an emoji phrase", `=("🔪")`, "I have a 🔪 here", []span{{9, 10, "🔪"}}},
		{"after an astral character", `=("kill")`, "𝄞 music kill", []span{{8, 12, "kill"}}},
		{"styled letters are astral", `~("kill")`, "go 𝐤𝐢𝐥𝐥 them", []span{{3, 7, "𝐤𝐢𝐥𝐥"}}},
		{"fuzzy separators", `~("kill")`, "I will k.i.l.l you", []span{{7, 14, "k.i.l.l"}}},
		{"fuzzy spaced", `~("kill")`, "🙂 k i l l", []span{{2, 9, "k i l l"}}},
		{"fuzzy leetspeak", `~("idiot")`, "u r an 1d10t", []span{{7, 12, "1d10t"}}},
		{"fuzzy inflection", `~("idiot")`, "IDIOTS!!!", []span{{0, 6, "IDIOTS"}}},
		{"regex", `REGEX("\d{3}-\d{4}")`, "☎ call 555-1234 now", []span{{7, 15, "555-1234"}}},
		{"regex after astral", `REGEX("(?i)loser+")`, "😀 LOSERRR", []span{{2, 9, "LOSERRR"}}},
		{"several occurrences in order", `~("kill")`, "kill, k.i.l.l and KILL", []span{{0, 4, "kill"}, {6, 13, "k.i.l.l"}, {18, 22, "KILL"}}},
		{"every signal of the rule", `=("kill") AND REGEX("[0-9]+")`, "kill 42", []span{{0, 4, "kill"}, {5, 7, "42"}}},
		{"not under NOT", `=("kill") AND NOT =("song")`, "kill it", []span{{0, 4, "kill"}}},
		{"not under NONE", `=("kill") AND NONE(=("song"), =("game"))`, "kill", []span{{0, 4, "kill"}}},
		{"only signals that reached the threshold", `=("kill") OR =("you")`, "kill", []span{{0, 4, "kill"}}},
		{"context", `=("kill") [AGAINST] =("you")`, "🔪 kill you", []span{{2, 10, "kill you"}}},
		{"sentiment sentence", `SENTIMENT("negative")`, "Nice day. I hate you, you awful idiot.", []span{{10, 38, "I hate you, you awful idiot."}}},
		{"lexical concept", `"weapons"`, "he had a gun", []span{{9, 12, "gun"}}},
		{"none when FALSE", `=("kill") AND =("never")`, "kill", nil},
		{"none for a miss", `=("kill")`, "skill", nil},
		{"none for absence", `NOT =("kill")`, "hello", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := mustCompile(t, tc.rule, CompileOptions{LabelName: "L"})
			r := eval(t, p, Content{Text: tc.text}, EvalOptions{})
			checkSpans(t, r, tc.text)
			got := spansOf(r.Sections[0].Assertions[0])
			if len(got) != len(tc.want) {
				t.Fatalf("spans = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("spans = %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}

func TestFlaggedSpansExceptionsAndLabels(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, "LABEL \"A\" {\n =(\"kill\")\n REGEX(\"x+\")\n EXCEPT WHEN { =(\"lyrics\") }\n}\n"+
		"LABEL \"B\" { ~(\"idiot\") }\nEXCEPT WHEN { =(\"news\") }", CompileOptions{})
	text := "🎵 lyrics: kill the 1d1ot, news at 11"
	r := eval(t, p, Content{Text: text}, EvalOptions{})
	checkSpans(t, r, text)
	a, b := r.Sections[0], r.Sections[1]
	if got := spansOf(a.Assertions[0]); len(got) != 1 || got[0] != (span{10, 14, "kill"}) {
		t.Errorf("A rule 1 spans = %+v", got)
	}
	if a.Assertions[1].Spans != nil {
		t.Errorf("a FALSE rule has spans %+v", *a.Assertions[1].Spans)
	}
	if got := spansOf(a.Exception.Assertions[0]); len(got) != 1 || got[0] != (span{2, 8, "lyrics"}) {
		t.Errorf("label exception spans = %+v", got)
	}
	if got := spansOf(b.Assertions[0]); len(got) != 1 || got[0] != (span{19, 24, "1d1ot"}) {
		t.Errorf("B spans = %+v", got)
	}
	if got := spansOf(r.Exception.Assertions[0]); len(got) != 1 || got[0] != (span{26, 30, "news"}) {
		t.Errorf("document exception spans = %+v", got)
	}
	if a.Result != OutcomeFalse || b.Result != OutcomeFalse {
		t.Errorf("exceptions did not fire: %s %s", a.Result, b.Result)
	}
}

func TestFlaggedSpansBounds(t *testing.T) {
	t.Parallel()
	t.Run("per assertion", func(t *testing.T) {
		t.Parallel()
		text := strings.Repeat("kill 😀 ", 40)
		r := eval(t, mustCompile(t, `~("kill")`, CompileOptions{LabelName: "L"}), Content{Text: text}, EvalOptions{})
		checkSpans(t, r, text)
		got := r.Sections[0].Assertions[0].FlaggedSpans()
		if len(got) != MaxSpansPerAssertion || got[0].Start != 0 || got[15].Start != 15*7 {
			t.Fatalf("%d spans, want the first %d: %+v", len(got), MaxSpansPerAssertion, got)
		}
	})
	t.Run("per report", func(t *testing.T) {
		t.Parallel()
		var rules strings.Builder
		for i := range 40 {
			rules.WriteString(`=("w` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `")` + "\n")
		}
		var text strings.Builder
		for i := range 40 {
			for range 20 {
				text.WriteString("w" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + " ")
			}
		}
		r := eval(t, mustCompile(t, rules.String(), CompileOptions{LabelName: "L"}), Content{Text: text.String()}, EvalOptions{})
		checkSpans(t, r, text.String())
		n := 0
		for i, a := range r.Sections[0].Assertions {
			n += len(a.FlaggedSpans())
			if want := min(MaxSpansPerAssertion, max(0, MaxSpansPerReport-i*MaxSpansPerAssertion)); len(a.FlaggedSpans()) != want {
				t.Fatalf("rule %d has %d spans, want %d", i, len(a.FlaggedSpans()), want)
			}
		}
		if n != MaxSpansPerReport {
			t.Fatalf("%d spans, want %d", n, MaxSpansPerReport)
		}
	})
	t.Run("text bytes", func(t *testing.T) {
		t.Parallel()
		// A match longer than the budget is left out whole; the short one after
		// it still fits.
		long := strings.Repeat("é", MaxSpanTextBytes/2+1)
		text := long + " x kill"
		r := eval(t, mustCompile(t, "REGEX(\"é+\")\n=(\"kill\")", CompileOptions{LabelName: "L"}), Content{Text: text}, EvalOptions{})
		checkSpans(t, r, text)
		if as := r.Sections[0].Assertions; as[0].Result != OutcomeTrue || as[0].Spans != nil {
			t.Fatalf("long match: %s with spans %v", as[0].Result, as[0].FlaggedSpans())
		}
		n := utf8.RuneCountInString(long)
		if got := spansOf(r.Sections[0].Assertions[1]); len(got) != 1 || got[0] != (span{n + 3, n + 7, "kill"}) {
			t.Fatalf("kill spans = %+v", got)
		}
	})
}

func TestFlaggedSpansTranscriptAndImages(t *testing.T) {
	t.Parallel()
	p := mustCompile(t, `=("kill")`, CompileOptions{LabelName: "L"})
	tr := &TimeRange{StartMs: 1000, EndMs: 2500}
	r := eval(t, p, Content{Text: "🎤 kill", Transcript: tr, Modality: "audio"}, EvalOptions{})
	got := r.Sections[0].Assertions[0].FlaggedSpans()
	if len(got) != 1 || got[0].Start != 2 || got[0].Transcript != tr {
		t.Fatalf("transcript spans = %+v", got)
	}
	// An image without OCR text has nothing to flag; with OCR text, its spans
	// are in that text.
	hash := mustCompile(t, `HASH("md5:00000000000000000000000000000000") OR =("kill")`, CompileOptions{LabelName: "L"})
	img := &ImageFeatures{MD5: "00000000000000000000000000000000"}
	if r := eval(t, hash, Content{Image: img}, EvalOptions{}); r.Result != OutcomeTrue || r.Sections[0].Assertions[0].Spans != nil {
		t.Fatalf("image without text: %s %+v", r.Result, r.Sections[0].Assertions[0].FlaggedSpans())
	}
	r = eval(t, hash, Content{Image: img, Text: "KILL"}, EvalOptions{})
	if got := spansOf(r.Sections[0].Assertions[0]); len(got) != 1 || got[0] != (span{0, 4, "KILL"}) {
		t.Fatalf("OCR spans = %+v", got)
	}
}

// TestFlaggedSpansDoNotKeepTheText: a report may be cached long after the
// request; its spans must not pin the (up to 256 KiB) text they came from.
func TestFlaggedSpansDoNotKeepTheText(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("a ", 1000) + "kill"
	r := eval(t, mustCompile(t, `=("kill")`, CompileOptions{LabelName: "L"}), Content{Text: text}, EvalOptions{})
	s := r.Sections[0].Assertions[0].FlaggedSpans()[0]
	start, end := uintptr(unsafe.Pointer(unsafe.StringData(text))), uintptr(unsafe.Pointer(unsafe.StringData(s.Text)))
	if end >= start && end < start+uintptr(len(text)) {
		t.Fatal("span text shares the evaluated text's memory")
	}
}

var spanFuzzPlan = func() *Plan {
	p, err := Compile(`LABEL "Spans" {
    ANY(=("kill"), =("i will kill you"), =("杀了你"), =("🔪"), ~("idiot"), ~("kill"))
    REGEX("(?i)l+o+s+e+r+") OR REGEX("\d+") OR REGEX("\p{Han}+") OR REGEX("(?s)x.{0,3}y")
    ~("loser") [NEAR] =("you")
    SENTIMENT("negative")
    "weapons"
    EXCEPT WHEN { =("lyrics") }
}
EXCEPT WHEN { =("news") }`, CompileOptions{})
	if err != nil {
		panic(err)
	}
	return p
}()

// FuzzFlaggedSpans checks, on any text and threshold, that every flagged span
// slices the evaluated text, counted in code points, to exactly its Text, and
// that the bounds hold.
func FuzzFlaggedSpans(f *testing.F) {
	for _, s := range []string{
		"I will kill you", "😀 k.i.l.l 👩‍👩‍👧 kill", "e\u0301 kill e\u0301", "我要杀了你 🔪", "𝄞 LOOOSER 123 you",
		"k\u200bi\u00adl\u2060l", "⒦⒤⒧⒧ 🇰🇮🇱🇱 𝐤𝐢𝐥𝐥", "I hate you, idiot. News: lyrics", "x😀😀y x\ny",
		strings.Repeat("kill 🔪 ", 300), "\x00\xff kill",
	} {
		f.Add(s, 0.5)
	}
	f.Fuzz(func(t *testing.T, text string, threshold float64) {
		if !(threshold > 0 && threshold <= 1) {
			threshold = 0.5
		}
		r, err := spanFuzzPlan.Evaluate(context.Background(), Content{Text: text}, EvalOptions{Threshold: threshold})
		if err != nil {
			t.Fatal(err)
		}
		checkSpans(t, r, text)
	})
}

func TestLimitSpans(t *testing.T) {
	t.Parallel()
	// Two evaluations each within the bounds, whose sections together are not:
	// what merging the chunks of a media item produces.
	text := strings.Repeat("kill ", MaxSpansPerAssertion)
	var src strings.Builder
	for i := range 10 {
		src.WriteString("LABEL \"L" + string(rune('a'+i)) + "\" { ~(\"kill\")\n =(\"kill\") }\n")
	}
	p := mustCompile(t, src.String(), CompileOptions{})
	r := eval(t, p, Content{Text: text}, EvalOptions{})
	if !withinSpanBounds(r) {
		t.Fatal("one evaluation is over the bounds")
	}
	merged := *r
	merged.Sections = append(slices.Clone(r.Sections), r.Sections...)
	before, _ := json.Marshal(&merged)
	got := LimitSpans(&merged)
	after, _ := json.Marshal(&merged)
	if string(before) != string(after) {
		t.Fatal("LimitSpans changed its argument")
	}
	checkSpans(t, got, text)
	n := 0
	for _, s := range got.Sections {
		for i := range s.Assertions {
			n += len(s.Assertions[i].FlaggedSpans())
		}
	}
	if n != MaxSpansPerReport || got.Sections[len(got.Sections)-1].Assertions[1].Spans != nil {
		t.Fatalf("%d spans after limiting; the last rule keeps %v", n, got.Sections[len(got.Sections)-1].Assertions[1].FlaggedSpans())
	}
	if LimitSpans(r) != r {
		t.Fatal("a report within the bounds was copied")
	}
}
