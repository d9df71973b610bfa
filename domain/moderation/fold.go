package moderation

import (
	"slices"

	"github.com/contenteval/contenteval/domain/rules"
)

// openAICategories are the categories of OpenAI's Moderation object, which
// its published schema requires in every result, and whether that schema
// lets their applied input types include "image".
var openAICategories = []struct {
	name  string
	image bool
}{
	{"harassment", false}, {"harassment/threatening", false},
	{"hate", false}, {"hate/threatening", false},
	{"illicit", false}, {"illicit/violent", false},
	{"self-harm", true}, {"self-harm/intent", true}, {"self-harm/instructions", true},
	{"sexual", true}, {"sexual/minors", false},
	{"violence", true}, {"violence/graphic", true},
}

// fold gathers the section (or label) reports of one input's parts.
type fold struct {
	cats   map[string]bool
	scores map[string]float64
	types  map[string]map[string]bool
	failed map[string]bool
}

func newFold() *fold {
	return &fold{cats: map[string]bool{}, scores: map[string]float64{}, types: map[string]map[string]bool{}, failed: map[string]bool{}}
}

// add takes one category's outcome on one part: TRUE on any part makes it
// true and its score is the highest. A category FAILED on a part is left
// to the parts it could be evaluated on (a text rule FAILS on an image
// without text); it fails only when it failed on every part.
func (f *fold) add(name string, outcome rules.Outcome, score float64, kind string) {
	if outcome == rules.OutcomeFailed {
		f.failed[name] = true
		return
	}
	f.cats[name] = f.cats[name] || outcome == rules.OutcomeTrue
	f.scores[name] = max(f.scores[name], min(max(score, 0), 1))
	if f.types[name] == nil {
		f.types[name] = map[string]bool{}
	}
	f.types[name][kind] = true
}

// result is the input's verdict: failed categories are left out (OpenAI's
// own are kept, false and 0, as its schema requires them) and OpenAI's
// categories are always present.
func (f *fold) result() Result {
	r := Result{Categories: map[string]bool{}, Scores: map[string]float64{}, AppliedInputTypes: map[string][]string{}}
	for name := range f.failed {
		if _, ok := f.cats[name]; !ok {
			r.Failed = append(r.Failed, name)
		}
	}
	slices.Sort(r.Failed)
	for name, v := range f.cats {
		r.Categories[name], r.Scores[name] = v, f.scores[name]
		r.Flagged = r.Flagged || v
		r.AppliedInputTypes[name] = kinds(f.types[name], true)
	}
	for _, c := range openAICategories {
		if _, ok := r.Categories[c.name]; !ok {
			r.Categories[c.name], r.Scores[c.name] = false, 0
		}
		r.AppliedInputTypes[c.name] = kinds(f.types[c.name], c.image)
	}
	return r
}

// kinds lists the input types seen, text first; image only when allowed.
func kinds(seen map[string]bool, image bool) []string {
	out := []string{}
	if seen["text"] {
		out = append(out, "text")
	}
	if image && seen["image"] {
		out = append(out, "image")
	}
	return out
}
