package modelbackend

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain/rules"
)

var update = flag.Bool("update", false, "rewrite the golden prompts")

func goldenBatch() rules.SignalBatch {
	return rules.SignalBatch{
		Content:       rules.Content{Text: "I know where you live. Watch out.", Modality: "text"},
		GlobalContext: "Comments on a cooking forum.",
		Signals: []rules.SignalRequest{
			{Kind: rules.SignalConcept, Text: "threat of violence", Source: `"threat of violence"`},
			{Kind: rules.SignalQuestion, Text: "Is the author threatening someone?", Source: `QUESTION("Is the author threatening someone?")`},
			{Kind: rules.SignalContext, Text: `"weapon"`, Operator: "USED AGAINST", Right: `=("a person")`, Source: `"weapon" [USED AGAINST] =("a person")`},
		},
	}
}

// Each profile's prompt is a golden file: a changed prompt must come with a
// new prompt version (the cache key), and this test is where it shows.
func TestProfilePromptsGolden(t *testing.T) {
	t.Parallel()
	for _, name := range ProfileNames() {
		t.Run(name, func(t *testing.T) {
			p := profiles[name]
			spec := Spec{Name: "b", Model: "m", Profile: name}
			spec.applyDefaults()
			b := goldenBatch()
			if !p.bundle {
				b.Signals = b.Signals[2:] // one criterion per call: the context
			}
			got := renderRequest(t, p, p.request(&spec, b))
			path := filepath.Join("testdata", "prompts", name+".txt")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./modelbackend -run Golden -update)", err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("prompt of %s changed; if on purpose, bump its version and run with -update.\ngot:\n%s", name, got)
			}
		})
	}
}

// renderRequest shows a request as a reviewer reads a prompt: each message
// or the raw prompt as text, then the other parameters as JSON.
func renderRequest(t *testing.T, p *profile, body map[string]any) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s (prompt %s)\n", p.endpoint, p.version)
	rest := map[string]any{}
	for k, v := range body {
		rest[k] = v
	}
	if prompt, ok := body["prompt"].(string); ok {
		b.WriteString("--- prompt ---\n" + prompt + "\n")
		delete(rest, "prompt")
	}
	if msgs, ok := body["messages"].([]map[string]any); ok {
		for _, m := range msgs {
			fmt.Fprintf(&b, "--- %s ---\n%v\n", m["role"], m["content"])
		}
		delete(rest, "messages")
	}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	b.WriteString("--- parameters ---\n")
	if err := enc.Encode(rest); err != nil {
		t.Fatal(err)
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

func chatTokens(toks []string, at int, alts map[string]float64) json.RawMessage {
	var content []map[string]any
	for i, tok := range toks {
		e := map[string]any{"token": tok, "logprob": -0.01, "top_logprobs": []any{}}
		if i == at {
			var top []any
			for k, v := range alts {
				top = append(top, map[string]any{"token": k, "logprob": v})
			}
			e["top_logprobs"] = top
		}
		content = append(content, e)
	}
	b, _ := json.Marshal(map[string]any{"content": content})
	return b
}

func TestScoreReadings(t *testing.T) {
	t.Parallel()
	lpU, lpS := math.Log(0.8), math.Log(0.15) // not normalised: the recipe normalises
	legacy := func(tok string, alts map[string]float64) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"tokens": []string{tok}, "top_logprobs": []map[string]float64{alts}})
		return b
	}
	answer := func(text string, lp json.RawMessage) []byte {
		c := map[string]any{"text": text}
		if lp != nil {
			c["logprobs"] = lp
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{c}})
		return b
	}
	chat := func(text string, lp json.RawMessage) []byte {
		c := map[string]any{"message": map[string]any{"content": text}}
		if lp != nil {
			c["logprobs"] = lp
		}
		b, _ := json.Marshal(map[string]any{"choices": []any{c}})
		return b
	}
	cases := []struct {
		name, profile string
		body          []byte
		n             int
		want          []float64
		how           string
		wantErr       bool
	}{
		{"llama guard: exp(lp_unsafe)/(exp(lp_unsafe)+exp(lp_safe)), vLLM legacy maps", "llama-guard",
			answer("unsafe\nS1", legacy("unsafe", map[string]float64{"unsafe": lpU, "safe": lpS, "\n": -5})), 1, []float64{0.8 / 0.95}, "logprob", false},
		{"llama guard: llama.cpp content list, tokens with spaces", "llama-guard",
			answer("safe", chatTokens([]string{"safe"}, 0, map[string]float64{" safe": lpU, " unsafe": lpS})), 1, []float64{0.15 / 0.95}, "logprob", false},
		{"llama guard without logprobs (Ollama): the answer", "llama-guard", answer("unsafe\nS1", nil), 1, []float64{1}, "label", false},
		{"llama guard: neither safe nor unsafe", "llama-guard", answer("I cannot help", nil), 1, nil, "", true},
		{"shieldgemma: softmax of Yes and No", "shieldgemma",
			answer("No", legacy("No", map[string]float64{"Yes": math.Log(0.3), "No": math.Log(0.7)})), 1, []float64{0.3}, "logprob", false},
		{"shieldgemma: Yes and ▁Yes both count", "shieldgemma",
			answer("Yes", chatTokens([]string{"Yes"}, 0, map[string]float64{"Yes": math.Log(0.5), "▁Yes": math.Log(0.3), "No": math.Log(0.2)})), 1, []float64{0.8}, "logprob", false},
		{"granite 3.3: at the yes/no token after <score>, past the thinking", "granite-guardian",
			chat("<think>maybe yes</think><score> no </score>", chatTokens([]string{"<think>", "maybe", " yes", "</think>", "<", "score", ">", " no", " </", "score", ">"}, 7,
				map[string]float64{" no": math.Log(0.9), " yes": math.Log(0.1)})), 1, []float64{0.1}, "logprob", false},
		{"granite without logprobs (LM Studio): the score tag", "granite-guardian", chat("<score> yes </score>", nil), 1, []float64{1}, "label", false},
		{"granite 3.0: a bare Yes", "granite-guardian", chat("Yes", nil), 1, []float64{1}, "label", false},
		{"generic: JSON, in a code fence after reasoning", "generic",
			chat("<think>{\"results\":[{\"id\":1,\"answer\":\"yes\"}]}</think>\n```json\n{\"results\":[{\"id\":2,\"answer\":\"yes\"},{\"id\":1,\"answer\":\"no\"}]}\n```", nil), 2, []float64{0, 1}, "label", false},
		{"generic: a missing criterion", "generic", chat(`{"results":[{"id":1,"answer":"yes"}]}`, nil), 2, nil, "", true},
		{"generic: a duplicated id", "generic", chat(`{"results":[{"id":1,"answer":"yes"},{"id":1,"answer":"no"}]}`, nil), 2, nil, "", true},
		{"generic: an id out of range", "generic", chat(`{"results":[{"id":3,"answer":"yes"}]}`, nil), 1, nil, "", true},
		{"generic: not JSON", "generic", chat(`yes`, nil), 1, nil, "", true},
		{"generic: an answer far past any verdict's size", "generic", chat(strings.Repeat("{", 70<<10)+`{"results":[{"id":1,"answer":"yes"}]}`, nil), 1, nil, "", true},
		{"safeguard: verdict and confidence", "gpt-oss-safeguard",
			chat(`{"results":[{"id":1,"violation":1,"confidence":"medium"},{"id":2,"violation":0,"confidence":"low"},{"id":3,"violation":"1"}]}`, nil), 3, []float64{0.9, 0.3, 1}, "label", false},
		{"safeguard: a verdict of 2", "gpt-oss-safeguard", chat(`{"results":[{"id":1,"violation":2}]}`, nil), 1, nil, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseAnswer(tc.body)
			if err != nil {
				t.Fatal(err)
			}
			got, err := profiles[tc.profile].read(a, tc.n)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("read %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want {
				if math.Abs(got[i].score-w) > 1e-9 || got[i].how != tc.how {
					t.Errorf("signal %d: %v %s, want %v %s", i, got[i].score, got[i].how, w, tc.how)
				}
			}
		})
	}
}

func TestParseAnswerRefusesGarbage(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, `[]`, `{"choices":[]}`, `{"choices":"x"}`, `not json`} {
		if _, err := parseAnswer([]byte(body)); err == nil {
			t.Errorf("%q: parsed", body)
		}
	}
}

func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte(`{"choices":[{"message":{"content":"{\"results\":[{\"id\":1,\"answer\":\"yes\"}]}"}}]}`), 1)
	f.Add([]byte(`{"choices":[{"text":"unsafe","logprobs":{"tokens":["unsafe"],"top_logprobs":[{"unsafe":-0.1,"safe":-2}]}}]}`), 1)
	f.Add([]byte(`{"choices":[{"message":{"content":"<think>{{{{</think><score> yes </score>"},"logprobs":{"content":[{"token":" yes","top_logprobs":[{"token":"yes","logprob":-0.5}]}]}}]}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, n int) {
		n = 1 + abs(n)%8
		a, err := parseAnswer(body)
		if err != nil {
			return
		}
		for _, name := range ProfileNames() {
			rs, err := profiles[name].read(a, n)
			if err != nil {
				continue
			}
			for _, r := range rs {
				if math.IsNaN(r.score) || r.score < 0 || r.score > 1 {
					t.Fatalf("%s: score %v outside [0, 1]", name, r.score)
				}
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
