package rules

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// corpusCase is one line of testdata/fuzzy_corpus.tsv.
type corpusCase struct {
	line                 int
	family, phrase, text string
	want                 bool
}

func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "fuzzy_corpus.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 4 || (fields[3] != "0" && fields[3] != "1") {
			t.Fatalf("fuzzy_corpus.tsv:%d: want family, phrase, text, 0 or 1", n)
		}
		// Invisible characters are written as \uXXXX so the file can be reviewed.
		text, err := strconv.Unquote(`"` + strings.ReplaceAll(fields[2], `"`, `\"`) + `"`)
		if err != nil {
			t.Fatalf("fuzzy_corpus.tsv:%d: %v", n, err)
		}
		out = append(out, corpusCase{n, fields[0], fields[1], text, fields[3] == "1"})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFuzzyCorpus measures fuzzy matching on testdata/fuzzy_corpus.tsv: obfuscated
// positives by family (invisible characters, styled and enclosed letters, the
// phrase's own inflections, mixed obfuscations, and the families docs/rules.md#matching lists from
// before) and innocent negatives (Scunthorpe words, inflected and styled innocent
// words). It logs recall per family and the false-positive rate, and fails below 98%
// recall or above 0 false positives: the bar fuzzy matching was accepted at.
func TestFuzzyCorpus(t *testing.T) {
	t.Parallel()
	cases := readCorpus(t)
	plans := map[string]*Plan{}
	type tally struct{ pos, hit, neg, fp int }
	byFamily := map[string]*tally{}
	var total tally
	var misses []string
	for _, c := range cases {
		p, ok := plans[c.phrase]
		if !ok {
			p = mustCompile(t, fmt.Sprintf("~(%q)", c.phrase), CompileOptions{LabelName: "L"})
			plans[c.phrase] = p
		}
		got := eval(t, p, Content{Text: c.text}, EvalOptions{}).Sections[0].Score >= DefaultThreshold
		f := byFamily[c.family]
		if f == nil {
			f = &tally{}
			byFamily[c.family] = f
		}
		for _, tl := range []*tally{f, &total} {
			if c.want {
				tl.pos++
				if got {
					tl.hit++
				}
			} else {
				tl.neg++
				if got {
					tl.fp++
				}
			}
		}
		if got != c.want {
			misses = append(misses, fmt.Sprintf("line %d (%s): ~(%q) on %q matched=%v, want %v", c.line, c.family, c.phrase, c.text, got, c.want))
		}
	}
	families := make([]string, 0, len(byFamily))
	for f := range byFamily {
		families = append(families, f)
	}
	sort.Strings(families)
	for _, name := range families {
		f := byFamily[name]
		t.Logf("%-10s positives %3d/%3d matched, negatives %3d/%3d matched", name, f.hit, f.pos, f.fp, f.neg)
	}
	recall := float64(total.hit) / float64(max(total.pos, 1))
	fpRate := float64(total.fp) / float64(max(total.neg, 1))
	t.Logf("recall %.1f%% (%d/%d), false-positive rate %.1f%% (%d/%d)", 100*recall, total.hit, total.pos, 100*fpRate, total.fp, total.neg)
	for _, m := range misses {
		t.Log(m)
	}
	if total.pos < 300 || total.neg < 200 {
		t.Errorf("corpus has %d positives and %d negatives; a real measure needs more", total.pos, total.neg)
	}
	if recall < 0.98 {
		t.Errorf("recall %.1f%%, want at least 98%%", 100*recall)
	}
	if total.fp > 0 {
		t.Errorf("%d false positives, want none", total.fp)
	}
}
