package moderation

import (
	"reflect"
	"testing"

	"github.com/contenteval/contenteval/domain/rules"
)

type outcome struct {
	name    string
	outcome rules.Outcome
	score   float64
	kind    string
}

func TestFold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       []outcome
		flagged  bool
		cats     map[string]bool
		scores   map[string]float64
		types    map[string][]string
		failed   []string
		absentOK []string // categories that must be absent
	}{
		{
			name:    "true on any part, highest score, the parts' types",
			in:      []outcome{{"violence", rules.OutcomeFalse, 0.2, "text"}, {"violence", rules.OutcomeTrue, 0.9, "image"}},
			flagged: true,
			cats:    map[string]bool{"violence": true}, scores: map[string]float64{"violence": 0.9},
			types: map[string][]string{"violence": {"text", "image"}},
		},
		{
			name:    "a part it cannot be evaluated on is left out",
			in:      []outcome{{"Mine", rules.OutcomeFailed, -1, "image"}, {"Mine", rules.OutcomeFalse, 0.1, "text"}},
			flagged: false,
			cats:    map[string]bool{"Mine": false}, scores: map[string]float64{"Mine": 0.1},
			types: map[string][]string{"Mine": {"text"}},
		},
		{
			name: "failed on every part: left out and listed; OpenAI's stay, false",
			in:   []outcome{{"Mine", rules.OutcomeFailed, -1, "text"}, {"sexual", rules.OutcomeFailed, -1, "text"}},
			cats: map[string]bool{"sexual": false}, scores: map[string]float64{"sexual": 0},
			types:    map[string][]string{"sexual": {}},
			failed:   []string{"Mine", "sexual"},
			absentOK: []string{"Mine"},
		},
		{
			name:    "OpenAI's text-only categories never list image",
			in:      []outcome{{"hate", rules.OutcomeTrue, 1, "image"}},
			flagged: true,
			cats:    map[string]bool{"hate": true}, scores: map[string]float64{"hate": 1},
			types: map[string][]string{"hate": {}},
		},
		{
			name: "scores are clamped to 0..1",
			in:   []outcome{{"x", rules.OutcomeFalse, -3, "text"}, {"y", rules.OutcomeTrue, 7, "text"}},
			cats: map[string]bool{"x": false, "y": true}, scores: map[string]float64{"x": 0, "y": 1}, flagged: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFold()
			for _, o := range tc.in {
				f.add(o.name, o.outcome, o.score, o.kind)
			}
			r := f.result()
			if r.Flagged != tc.flagged {
				t.Errorf("flagged = %v", r.Flagged)
			}
			for _, c := range openAICategories {
				if _, ok := r.Categories[c.name]; !ok {
					t.Errorf("OpenAI's %q is missing", c.name)
				}
				if _, ok := r.AppliedInputTypes[c.name]; !ok {
					t.Errorf("OpenAI's %q has no applied types", c.name)
				}
			}
			for k, v := range tc.cats {
				if got, ok := r.Categories[k]; !ok || got != v {
					t.Errorf("categories[%q] = %v, %v; want %v", k, got, ok, v)
				}
			}
			for k, v := range tc.scores {
				if r.Scores[k] != v {
					t.Errorf("scores[%q] = %v; want %v", k, r.Scores[k], v)
				}
			}
			for k, v := range tc.types {
				if !reflect.DeepEqual(r.AppliedInputTypes[k], v) {
					t.Errorf("types[%q] = %v; want %v", k, r.AppliedInputTypes[k], v)
				}
			}
			if !reflect.DeepEqual(r.Failed, tc.failed) {
				t.Errorf("failed = %v; want %v", r.Failed, tc.failed)
			}
			for _, k := range tc.absentOK {
				if _, ok := r.Categories[k]; ok {
					t.Errorf("%q should be absent", k)
				}
			}
		})
	}
}

func TestIsOpenAIModel(t *testing.T) {
	for model, want := range map[string]bool{
		"": true, "omni-moderation-latest": true, "omni-moderation-2024-09-26": true,
		"text-moderation-latest": true, "text-moderation-stable": true,
		"mod": false, "label:x": false, "tag:omni-moderation-latest": false,
	} {
		if got := IsOpenAIModel(model); got != want {
			t.Errorf("IsOpenAIModel(%q) = %v", model, got)
		}
	}
}

func TestRenameField(t *testing.T) {
	parts := []Part{{Field: "input[0]"}, {Field: "input[1].image_url.url"}}
	for in, want := range map[string]string{
		"contentData[1].imageUrl": "input[1].image_url.url",
		"contentData[0]":          "input[0]",
		"contentData":             "input[0]",
		"contentData[7]":          "contentData[7]",
		"contentData[x":           "contentData[x",
		"threshold":               "threshold",
	} {
		if got := renameField(in, parts); got != want {
			t.Errorf("renameField(%q) = %q; want %q", in, got, want)
		}
	}
}
