package modelbackend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/contenteval/contenteval/domain/traces"
	"github.com/contenteval/contenteval/tracing"
	"go.opentelemetry.io/otel/attribute"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

// maxAnswerBytes bounds what is read of an answer: a reasoning model's
// answer is a few KiB, and even 32768 tokens (the most maxTokens allows) of
// reasoning and answer, or the most logprobs an answer may hold
// (maxAnswerValues), stay well below; a server that sends more is broken
// or hostile, and what is read is held in memory until it is refused.
const maxAnswerBytes = 1 << 20

// The backoff between attempts: full jitter over an exponential base, or
// the server's Retry-After when it gives one (capped, and never past the
// caller's deadline).
const (
	backoffBase   = 100 * time.Millisecond
	backoffCap    = 5 * time.Second
	retryAfterCap = 30 * time.Second
)

// callError is a failed call, with the reason metrics and reports give.
type callError struct {
	reason string // timeout | unreachable | http_429 | http_5xx | http_4xx | malformed | circuit_open | too_large
	msg    string
	// retryAfter is the server's Retry-After, when it sent one.
	retryAfter time.Duration
}

func (e *callError) Error() string { return e.msg }

func (e *callError) retryable() bool {
	switch e.reason {
	case "timeout", "unreachable", "http_429", "http_5xx":
		return true
	}
	return false
}

// caller makes the HTTP calls of one backend: the concurrency cap, the
// per-attempt timeout, retries and the circuit breakers.
type caller struct {
	spec     *Spec
	http     *http.Client
	key      string
	slots    *fairSlots
	breakers *breakers
	// wait sleeps between attempts; tests record the waits instead.
	wait func(ctx context.Context, d time.Duration) error
}

func newCaller(s *Spec) *caller {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = s.MaxConcurrency
	tr.Proxy = nil // a model server is the operator's own; no environment proxy in between
	c := &caller{
		spec: s,
		http: &http.Client{Transport: tracing.WrapTransport(tr), CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // never carry the key elsewhere
		}},
		slots:    newFairSlots(s.MaxConcurrency),
		breakers: newBreakers(s.Name),
		wait:     sleep,
	}
	if s.APIKeyEnv != "" {
		c.key = os.Getenv(s.APIKeyEnv)
	}
	return c
}

// call posts body to the profile's endpoint for account and returns the
// parsed answer.
func (c *caller) call(ctx context.Context, account, endpoint string, body map[string]any) (_ *answer, err error) {
	ctx, span := traces.Start(ctx, "modelbackend.call")
	if span.IsRecording() {
		span.SetAttributes(traces.Backend(c.spec.Name), traces.AccountID(account),
			attribute.String("contenteval.backend.model", c.spec.Model), attribute.String("contenteval.backend.endpoint", endpoint))
	}
	defer func() { traces.Fail(span, err); span.End() }()
	body["model"] = c.spec.Model
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.breakers.execute(account, func() (*answer, error) { return c.attempts(ctx, account, endpoint, payload) })
}

func (c *caller) attempts(ctx context.Context, account, endpoint string, payload []byte) (*answer, error) {
	retries := *c.spec.Retries
	for attempt := 0; ; attempt++ {
		a, err := c.attempt(ctx, account, endpoint, payload)
		if err == nil {
			return a, nil
		}
		var ce *callError
		if ctx.Err() != nil || !errors.As(err, &ce) || !ce.retryable() || attempt >= retries {
			return nil, err
		}
		wait := time.Duration(rand.Int64N(int64(min(backoffCap, backoffBase<<attempt)) + 1))
		if ce.retryAfter > 0 {
			wait = min(ce.retryAfter, retryAfterCap)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, err // the answer would come too late anyway
		}
		if err := c.wait(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *caller) attempt(ctx context.Context, account, endpoint string, payload []byte) (*answer, error) {
	if err := c.slots.acquire(ctx, account); err != nil {
		return nil, err
	}
	defer c.slots.release(account)
	actx, cancel := context.WithTimeout(ctx, c.spec.Timeout.Duration)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.spec.URL+endpoint, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, actx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, actx, err)
	}
	if len(body) > maxAnswerBytes {
		return nil, &callError{reason: "malformed", msg: fmt.Sprintf("answer larger than %d bytes", maxAnswerBytes)}
	}
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		return nil, &callError{reason: "http_429", msg: "HTTP 429", retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	case s >= 500:
		return nil, &callError{reason: "http_5xx", msg: "HTTP " + strconv.Itoa(s), retryAfter: retryAfter(resp.Header.Get("Retry-After"))}
	case s != http.StatusOK:
		return nil, &callError{reason: "http_4xx", msg: "HTTP " + strconv.Itoa(s)}
	}
	a, err := parseAnswer(body)
	if err != nil {
		return nil, &callError{reason: "malformed", msg: err.Error()}
	}
	return a, nil
}

// transportError tells a timeout of the attempt from an unreachable server;
// the caller's own end is returned as it is.
func (c *caller) transportError(ctx, actx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ne net.Error
	if actx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return &callError{reason: "timeout", msg: "no answer within " + c.spec.Timeout.Duration.String()}
	}
	return &callError{reason: "unreachable", msg: "unreachable"}
}

// retryAfter reads Retry-After in seconds or as an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(min(s, 3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
