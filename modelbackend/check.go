package modelbackend

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// CheckResult is one backend's answer to the probe of Check.
type CheckResult struct {
	Latency     time.Duration
	Score       float64
	Reading     string // logprob | label
	InputTokens int64
	Err         error
}

// checkProbe is harmless content and a concept every moderation model
// knows: the point is the round trip and the reading, not the verdict.
var checkProbe = rules.SignalBatch{
	Content: rules.Content{Text: "Hello! Looking forward to seeing everyone at the picnic on Saturday.", Modality: "text"},
	Signals: []rules.SignalRequest{{Kind: rules.SignalConcept, Text: "threat of violence", Source: `"threat of violence"`}},
}

// Check calls the backend once, past its cache and its onFailure fallback,
// as `contenteval backends check` does.
func (b *Backend) Check(ctx context.Context) CheckResult {
	start := time.Now()
	res, err := b.ask(ctx, "", checkProbe)
	out := CheckResult{Latency: time.Since(start), Err: err}
	if err == nil {
		out.Score, out.Reading, out.InputTokens = res.readings[0].score, res.readings[0].how, res.usage
	}
	return out
}

// Model is the model the backend asks.
func (b *Backend) Model() string { return b.spec.Model }

// Profile is the backend's profile.
func (b *Backend) Profile() string { return b.spec.Profile }
