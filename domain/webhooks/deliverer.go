package webhooks

import (
	"context"
	"errors"
	"fmt"
	"github.com/contenteval/contenteval/domain/traces"
	"go.opentelemetry.io/otel/attribute"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/domain"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Webhook delivery policy.
const (
	webhookFirstRetry = 5 * time.Second
	webhookMaxBackoff = time.Hour
	webhookLease      = 2 * time.Minute
)

// Deliverer drains the webhook outbox: it signs each payload per the Standard
// Webhooks scheme with the account's secret and retries with exponential
// backoff for 24 hours.
type Deliverer struct {
	Store    domain.WebhookStore
	Payloads domain.WebhookPayloads
	Poster   domain.WebhookPoster
	Accounts domain.WebhookSecrets
	Clock    domain.Clock
	Log      *slog.Logger
	Owner    string
	// Poll is how often the outbox is read when idle.
	Poll time.Duration
	// Stats counts this process's delivery attempts by outcome.
	Stats DeliveryStats
}

// DeliveryStats counts delivery attempts: Delivered succeeded, Retrying
// failed and will be tried again, Abandoned failed for good.
type DeliveryStats struct {
	Delivered, Retrying, Abandoned atomic.Int64
}

func (st *DeliveryStats) count(a domain.WebhookAttempt) {
	switch {
	case a.DeliveredAt != nil:
		st.Delivered.Add(1)
	case a.FailedAt != nil:
		st.Abandoned.Add(1)
	default:
		st.Retrying.Add(1)
	}
}

// Run delivers until ctx is done.
func (d *Deliverer) Run(ctx context.Context) {
	poll := d.Poll
	if poll <= 0 {
		poll = time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		n, err := d.DeliverDue(ctx)
		if err != nil && ctx.Err() == nil {
			d.Log.Warn("webhook outbox", "error", err.Error())
		}
		if n > 0 {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeliverDue makes one attempt at every due event (up to a batch) and
// returns how many it tried.
func (d *Deliverer) DeliverDue(ctx context.Context) (int, error) {
	now := d.Clock.Now()
	events, err := d.Store.ClaimWebhooks(ctx, d.Owner, now, webhookLease, 32)
	if err != nil {
		return 0, err
	}
	for _, e := range events {
		attempt := d.attempt(ctx, e)
		d.Stats.count(attempt)
		if err := d.Store.FinishWebhook(ctx, e.ID, d.Owner, attempt); err != nil && domain.ErrorCode(err) != domain.Aborted {
			return len(events), err
		}
	}
	return len(events), nil
}

func (d *Deliverer) attempt(ctx context.Context, e *domain.WebhookEvent) domain.WebhookAttempt {
	now := d.Clock.Now()
	// The delivery belongs to the trace of the request or run that wrote
	// the event, however much later and wherever it is made.
	ctx, span := traces.Start(traces.Resume(ctx, e.TraceParent, e.TraceState), "webhooks.deliver")
	if span.IsRecording() {
		span.SetAttributes(traces.EventID(e.ID), traces.AccountID(e.AccountID), traces.JobID(e.SubjectID), attribute.String("contenteval.webhook.subject_kind", e.SubjectKind),
			attribute.Int("contenteval.webhook.attempt", e.Attempts+1))
	}
	err := d.send(ctx, e, now)
	traces.Fail(span, err)
	span.End()
	if err == nil {
		return domain.WebhookAttempt{DeliveredAt: &now}
	}
	msg := err.Error()
	backoff := webhookFirstRetry << min(e.Attempts, 20)
	if backoff > webhookMaxBackoff {
		backoff = webhookMaxBackoff
	}
	next := now.Add(backoff)
	var permanent *permanentError
	if errors.As(err, &permanent) || next.Sub(e.Created) > domain.WebhookRetryWindow {
		d.Log.Warn("webhook abandoned", "event", e.ID, "account", e.AccountID, "attempts", e.Attempts+1, "error", msg)
		return domain.WebhookAttempt{FailedAt: &now, Error: msg}
	}
	return domain.WebhookAttempt{Next: next, Error: msg}
}

type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func (d *Deliverer) send(ctx context.Context, e *domain.WebhookEvent, now time.Time) error {
	account, err := d.Accounts.GetAccount(ctx, e.AccountID)
	if err != nil {
		return err
	}
	if account.WebhookSecret == "" {
		return &permanentError{"the account has no webhook secret"}
	}
	signer, err := standardwebhooks.NewWebhook(account.WebhookSecret)
	if err != nil {
		return &permanentError{"the account's webhook secret is not valid"}
	}
	body, err := d.Payloads.Render(ctx, e)
	if err != nil {
		return err
	}
	sig, err := signer.Sign(e.ID, now, body)
	if err != nil {
		return err
	}
	header := map[string][]string{
		"Content-Type":      {"application/json"},
		"User-Agent":        {"contenteval-webhooks/1"},
		"Webhook-Id":        {e.ID},
		"Webhook-Timestamp": {fmt.Sprint(now.Unix())},
		"Webhook-Signature": {sig},
	}
	names := make([]string, 0, len(e.Headers))
	for k := range e.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		header["X-Webhook-"+k] = []string{e.Headers[k]}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, err := d.Poster.Post(ctx, e.URL, header, body)
	if err != nil {
		return err
	}
	if status < 200 || status > 299 {
		return fmt.Errorf("the endpoint answered HTTP %d", status)
	}
	return nil
}
