package modelbackend

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// answer is what a model server returned, in the shapes of every server we
// speak to: chat (message.content, reasoning in reasoning_content or
// reasoning) or completions (text); logprobs as chat's content list or the
// legacy tokens/top_logprobs maps.
type answer struct {
	text   string // the answer as generated, reasoning tags and all
	tokens []tokenAlternatives
	usage  struct{ input, output int64 }
}

// tokenAlternatives is one generated token and the top alternatives the
// server reported for its position (log probabilities).
type tokenAlternatives struct {
	token string
	top   []tokenLogprob
}

type tokenLogprob struct {
	token   string
	logprob float64
}

type wireAnswer struct {
	Choices []struct {
		Text    *string `json:"text"`
		Message *struct {
			// A string, or parts on some servers: read as one or the other,
			// never as arbitrary values.
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		Logprobs json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

type chatLogprobs struct {
	Content []struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		TopLogprobs []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"content"`
	// The legacy completions shape (vLLM, OpenAI): parallel lists.
	Tokens      []string             `json:"tokens"`
	TopLogprobs []map[string]float64 `json:"top_logprobs"`
}

// malformedError is an answer that could not be read: a bug or an attack
// on the server's side, never a score.
type malformedError struct{ msg string }

func (e *malformedError) Error() string { return "malformed answer: " + e.msg }

func errUnreadable(what string) error {
	return &malformedError{msg: "no " + what}
}

func parseAnswer(body []byte) (*answer, error) {
	if err := checkAnswerShape(body); err != nil {
		return nil, err
	}
	var w wireAnswer
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, &malformedError{msg: "not JSON: " + shorten(err.Error())}
	}
	if len(w.Choices) == 0 {
		return nil, &malformedError{msg: "no choices"}
	}
	c := w.Choices[0]
	a := &answer{}
	switch {
	case c.Message != nil:
		a.text = messageText(c.Message.Content)
	case c.Text != nil:
		a.text = *c.Text
	}
	if w.Usage != nil {
		a.usage.input, a.usage.output = max(w.Usage.PromptTokens, 0), max(w.Usage.CompletionTokens, 0)
	}
	if len(c.Logprobs) > 0 && !bytes.Equal(c.Logprobs, []byte("null")) {
		var lp chatLogprobs
		if err := json.Unmarshal(c.Logprobs, &lp); err == nil {
			for _, t := range lp.Content {
				ta := tokenAlternatives{token: t.Token}
				for _, alt := range t.TopLogprobs {
					ta.top = append(ta.top, tokenLogprob{alt.Token, alt.Logprob})
				}
				a.tokens = append(a.tokens, ta)
			}
			for i, t := range lp.Tokens {
				ta := tokenAlternatives{token: t}
				if i < len(lp.TopLogprobs) {
					for tok, l := range lp.TopLogprobs[i] {
						ta.top = append(ta.top, tokenLogprob{tok, l})
					}
				}
				a.tokens = append(a.tokens, ta)
			}
		}
	}
	return a, nil
}

// messageText reads a chat message's content: a string, or the text of
// its parts (other parts and other shapes read as no text).
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// final is the answer without the reasoning a model wrote before it
// (<think>...</think>); reasoning sent apart (reasoning_content) is never
// read at all.
func (a *answer) final() string {
	t := a.text
	for {
		i := strings.Index(t, "<think>")
		if i < 0 {
			break
		}
		j := strings.Index(t[i:], "</think>")
		if j < 0 {
			return strings.TrimSpace(t[:i]) // the answer never came
		}
		t = t[:i] + t[i+j+len("</think>"):]
	}
	return strings.TrimSpace(t)
}

// firstTokenProbability is p(pos) / (p(pos) + p(neg)) at the first answer
// token, outside any reasoning, that is pos or neg, summed over the
// alternatives that spell them (" Yes", "yes", "▁yes").
func (a *answer) firstTokenProbability(pos, neg string) (float64, bool) {
	var seen strings.Builder
	inThink, from := false, 0
	for _, t := range a.tokens {
		seen.WriteString(t.token)
		inThink, from = thinkState(seen.String(), inThink, from)
		if inThink {
			continue
		}
		if w := normToken(t.token); w != pos && w != neg {
			continue
		}
		var p, n float64
		for _, alt := range t.top {
			if math.IsNaN(alt.logprob) || alt.logprob > 0 {
				continue
			}
			switch normToken(alt.token) {
			case pos:
				p += math.Exp(alt.logprob)
			case neg:
				n += math.Exp(alt.logprob)
			}
		}
		if p+n == 0 {
			return 0, false
		}
		return p / (p + n), true
	}
	return 0, false
}

// thinkState follows <think> and </think> through the text generated so
// far, looking only at what is new since from (less a tag's length, as a
// tag may come in pieces), so the scan stays linear.
func thinkState(s string, inThink bool, from int) (bool, int) {
	for {
		tag := "<think>"
		if inThink {
			tag = "</think>"
		}
		i := strings.Index(s[from:], tag)
		if i < 0 {
			return inThink, max(from, len(s)-len("</think>"))
		}
		inThink, from = !inThink, from+i+len(tag)
	}
}

func normToken(t string) string {
	t = strings.NewReplacer("▁", "", "Ġ", "", "Ċ", "").Replace(t)
	return strings.ToLower(strings.TrimSpace(t))
}

func firstWord(text string) string {
	f := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z')
	})
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func stripScoreTags(text string) string {
	return strings.NewReplacer("<score>", " ", "</score>", " ").Replace(text)
}

// maxJSONCandidates and maxVerdictBytes bound the search for the answer's
// JSON object, so a hostile answer full of braces costs little: a verdict
// the profiles ask for is a few hundred bytes (max_tokens keeps honest
// servers far below the bound).
const (
	maxJSONCandidates = 64
	maxVerdictBytes   = 64 << 10
)

// readResults reads {"results":[{"id":N, ...}]} from the final answer (the
// last such object when the model wrote several, code fences allowed) and
// scores each of the n criteria with score; every criterion must be there
// once.
func readResults(text string, n int, score func(map[string]any) (float64, bool)) ([]reading, error) {
	if len(text) > maxVerdictBytes {
		return nil, &malformedError{msg: fmt.Sprintf("a final answer of %d bytes; a verdict is at most %d", len(text), maxVerdictBytes)}
	}
	obj, ok := lastResultsObject(text)
	if !ok {
		return nil, errUnreadable(`JSON object with "results"`)
	}
	out := make([]reading, n)
	got := make([]bool, n)
	for _, r := range obj.Results {
		id, ok := number(r["id"])
		if !ok || id != math.Trunc(id) || id < 1 || int(id) > n || got[int(id)-1] {
			return nil, &malformedError{msg: fmt.Sprintf("result id %v is not one of 1..%d once", r["id"], n)}
		}
		v, ok := score(r)
		if !ok {
			return nil, &malformedError{msg: fmt.Sprintf("result %d has no readable verdict", int(id))}
		}
		out[int(id)-1], got[int(id)-1] = reading{score: v, how: "label"}, true
	}
	for i, g := range got {
		if !g {
			return nil, &malformedError{msg: fmt.Sprintf("no result for criterion %d", i+1)}
		}
	}
	return out, nil
}

type resultsObject struct {
	Results []map[string]any `json:"results"`
}

func lastResultsObject(text string) (resultsObject, bool) {
	tried := 0
	for end := len(text); end > 0 && tried < maxJSONCandidates; {
		i := strings.LastIndexByte(text[:end], '{')
		if i < 0 {
			break
		}
		tried++
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var obj resultsObject
		var raw map[string]json.RawMessage
		if err := dec.Decode(&raw); err == nil {
			if _, has := raw["results"]; has {
				b, _ := json.Marshal(raw)
				if json.Unmarshal(b, &obj) == nil {
					return obj, true
				}
			}
		}
		end = i
	}
	return resultsObject{}, false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

func shorten(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
