// Package modelbackendtest is a fake model server that speaks HTTP the way
// vLLM, llama.cpp's llama-server, Ollama and LM Studio do, for tests and
// benchmarks of model backends: no model weights are reachable here, so the
// fake decides from the prompt and answers in each server's shapes (with
// and without logprobs, with reasoning), and can be made to fail (429 with
// Retry-After, 500, malformed JSON, slowness).
package modelbackendtest

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Flavor is the server whose answer shapes the fake reproduces.
type Flavor string

// The model servers the profiles are written for, by how they answer.
const (
	// VLLM: logprobs (chat content list; legacy maps on /completions),
	// reasoning in reasoning_content.
	VLLM Flavor = "vllm"
	// LlamaCPP: logprobs as chat's content list on both endpoints.
	LlamaCPP Flavor = "llama.cpp"
	// Ollama: no logprobs on /v1; reasoning text inline before the answer.
	Ollama Flavor = "ollama"
	// LMStudio: no logprobs at all.
	LMStudio Flavor = "lmstudio"
)

// Decide is the fake's judgement: the probability that content meets the
// criterion (the prompt's wording of a concept, question or context).
type Decide func(criterion, content string) float64

// Failure makes the next calls fail.
type Failure struct {
	Status     int           // e.g. 429 or 500; 0 for none
	RetryAfter string        // Retry-After header with Status
	Times      int           // how many calls fail (0: all, while set)
	Malformed  bool          // a 200 whose body is not JSON
	Delay      time.Duration // before answering
}

// Server is a running fake.
type Server struct {
	*httptest.Server
	Flavor Flavor
	// Reasoning makes answers carry reasoning text (inline <think> for
	// Ollama and llama.cpp, reasoning_content for vLLM) that mentions the
	// opposite verdict, to prove it is not read.
	Reasoning    bool
	PromptTokens int64 // usage.prompt_tokens of every answer (default 120)
	// Latency delays every answer, as a model's inference time would.
	Latency time.Duration

	decide   Decide
	mu       sync.Mutex
	failure  Failure
	failLeft int
	calls    atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
	requests []map[string]any
}

// New starts a fake of flavor deciding with d.
func New(flavor Flavor, d Decide) *Server {
	s := &Server{Flavor: flavor, decide: d, PromptTokens: 120}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// BaseURL is the OpenAI-style base, ending in /v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Calls counts the requests received.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Requests returns the request bodies received, in order.
func (s *Server) Requests() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

// Fail sets the failure of the next calls (Failure{} to stop failing).
func (s *Server) Fail(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failure, s.failLeft = f, f.Times
}

// MaxInFlight is the most requests the fake held at once.
func (s *Server) MaxInFlight() int64 { return s.maxIn.Load() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxIn.Load()
		if n <= m || s.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, body)
	f := s.failure
	failing := f != (Failure{})
	if failing && f.Times > 0 {
		if s.failLeft == 0 {
			failing = false
		} else {
			s.failLeft--
		}
	}
	s.mu.Unlock()
	if failing && f.Delay > 0 {
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if failing && f.Status != 0 {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte(`{"error":{"message":"failing on purpose"}}`))
		return
	}
	if failing && f.Malformed {
		_, _ = w.Write([]byte(`{"choices":[{"message":{"content":"{\"results\":[`))
		return
	}
	if s.Latency > 0 {
		t := time.NewTimer(s.Latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	var out map[string]any
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		out = s.chat(body)
	case strings.HasSuffix(r.URL.Path, "/completions"):
		out = s.completion(body)
	default:
		http.NotFound(w, r)
		return
	}
	out["usage"] = map[string]any{"prompt_tokens": s.PromptTokens, "completion_tokens": 5, "total_tokens": s.PromptTokens + 5}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

var (
	numberedRe  = regexp.MustCompile(`(?m)^(\d+)\. (.*)$`)
	categoryRe  = regexp.MustCompile(`(?m)^S1: (.*)\.$`)
	principleRe = regexp.MustCompile(`(?m)^\* (.*)$`)
)

// chat answers the generic, gpt-oss-safeguard and granite-guardian
// profiles.
func (s *Server) chat(body map[string]any) map[string]any {
	msgs, _ := body["messages"].([]any)
	var system, user string
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		text := messageText(mm["content"])
		if mm["role"] == "system" {
			system = text
		} else {
			user = text
		}
	}
	if kw, ok := body["chat_template_kwargs"].(map[string]any); ok { // granite-guardian
		gc, _ := kw["guardian_config"].(map[string]any)
		crit, _ := gc["custom_criteria"].(string)
		crit, _, _ = strings.Cut(crit, "\n") // the criterion; the context follows it
		p := s.decide(crit, user)
		return s.chatAnswer(verdict(p, "<score> yes </score>", "<score> no </score>"), s.tokens([]string{"<", "score", ">", pick(p, " yes", " no"), " </", "score", ">"}, 3, " yes", " no", p), body)
	}
	content := user
	if i, j := strings.Index(user, "<content>\n"), strings.LastIndex(user, "\n</content>"); i >= 0 && j > i {
		content = user[i+len("<content>\n") : j]
	}
	// The criteria are the system message's: a numbered line in the
	// content is not one.
	var results []string
	for _, m := range numberedRe.FindAllStringSubmatch(system, -1) {
		p := s.decide(m[2], content)
		if strings.Contains(system, `"violation"`) {
			results = append(results, `{"id":`+m[1]+`,"violation":`+pick(p, "1", "0")+`,"confidence":"high"}`)
		} else {
			results = append(results, `{"id":`+m[1]+`,"answer":"`+pick(p, "yes", "no")+`"}`)
		}
	}
	return s.chatAnswer(`{"results":[`+strings.Join(results, ",")+`]}`, nil, body)
}

func (s *Server) chatAnswer(text string, lp map[string]any, body map[string]any) map[string]any {
	msg := map[string]any{"role": "assistant", "content": text}
	if s.Reasoning {
		const thought = "The user may want 'no' or 'safe' here; {\"results\":[]} is not the answer. yes"
		if s.Flavor == VLLM {
			msg["reasoning_content"] = thought
		} else {
			msg["content"] = "<think>" + thought + "</think>\n" + text
			if lp != nil {
				lp = s.prefixThink(lp, thought)
			}
		}
	}
	choice := map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}
	if lp != nil && body["logprobs"] == true && s.logprobs() {
		choice["logprobs"] = lp
	}
	return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion", "choices": []any{choice}}
}

// completion answers the llama-guard and shieldgemma profiles.
func (s *Server) completion(body map[string]any) map[string]any {
	prompt, _ := body["prompt"].(string)
	var text string
	var lp map[string]any
	if m := categoryRe.FindStringSubmatch(prompt); m != nil { // llama-guard
		content := between(prompt, "User: ", "\n\n<END CONVERSATION>")
		p := s.decide(m[1], content)
		text = verdict(p, "unsafe\nS1", "safe")
		lp = s.completionLogprobs(pick(p, "unsafe", "safe"), "unsafe", "safe", p)
	} else if m := principleRe.FindStringSubmatch(after(prompt, "<end_of_turn>")); m != nil { // shieldgemma
		content := between(prompt, "Human Question: ", "\n<end_of_turn>")
		p := s.decide(m[1], content)
		text = pick(p, "Yes", "No")
		lp = s.completionLogprobs(text, "Yes", "No", p)
	}
	choice := map[string]any{"index": 0, "text": text, "finish_reason": "stop"}
	if lp != nil && body["logprobs"] != nil && s.logprobs() {
		choice["logprobs"] = lp
	} else {
		choice["logprobs"] = nil
	}
	return map[string]any{"id": "cmpl-fake", "object": "text_completion", "choices": []any{choice}}
}

func (s *Server) logprobs() bool { return s.Flavor == VLLM || s.Flavor == LlamaCPP }

// completionLogprobs: vLLM's legacy maps, llama.cpp's content list.
func (s *Server) completionLogprobs(chosen, pos, neg string, p float64) map[string]any {
	if s.Flavor == VLLM {
		return map[string]any{
			"tokens": []string{chosen}, "token_logprobs": []float64{logOf(pick(p, p, 1-p))},
			"top_logprobs": []map[string]float64{{pos: logOf(p), neg: logOf(1 - p), "\n": -9}},
		}
	}
	return s.tokens([]string{chosen}, 0, pos, neg, p)
}

// tokens is chat's logprobs content list, with alternatives at position at.
func (s *Server) tokens(toks []string, at int, pos, neg string, p float64) map[string]any {
	var content []any
	for i, t := range toks {
		e := map[string]any{"token": t, "logprob": -0.01, "top_logprobs": []any{}}
		if i == at {
			e["logprob"] = logOf(pick(p, p, 1-p))
			e["top_logprobs"] = []any{
				map[string]any{"token": pos, "logprob": logOf(p)},
				map[string]any{"token": neg, "logprob": logOf(1 - p)},
				map[string]any{"token": "maybe", "logprob": -12.0},
			}
		}
		content = append(content, e)
	}
	return map[string]any{"content": content}
}

// prefixThink puts the reasoning's tokens, with a decoy verdict among them,
// before the answer's.
func (s *Server) prefixThink(lp map[string]any, thought string) map[string]any {
	decoy := map[string]any{"token": " yes", "logprob": -0.1, "top_logprobs": []any{
		map[string]any{"token": " yes", "logprob": -0.1}, map[string]any{"token": " no", "logprob": -2.4},
	}}
	pre := []any{map[string]any{"token": "<think>", "logprob": 0.0}, map[string]any{"token": thought, "logprob": -0.2}, decoy,
		map[string]any{"token": "</think>", "logprob": 0.0}, map[string]any{"token": "\n", "logprob": 0.0}}
	content, _ := lp["content"].([]any)
	return map[string]any{"content": append(pre, content...)}
}

func messageText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, part := range v {
			if m, ok := part.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
				if m["type"] == "image_url" {
					b.WriteString("[image]")
				}
			}
		}
		return b.String()
	}
	return ""
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// after is s past the first from, or "" without one.
func after(s, from string) string {
	if _, rest, ok := strings.Cut(s, from); ok {
		return rest
	}
	return ""
}

func pick[T any](p float64, yes, no T) T {
	if p >= 0.5 {
		return yes
	}
	return no
}

func verdict(p float64, yes, no string) string { return pick(p, yes, no) }

func logOf(p float64) float64 {
	if p <= 0 {
		return -100
	}
	return math.Log(p)
}
