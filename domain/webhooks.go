package domain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// WebhookEvent is one durable outbox row: a notification owed to a customer
// URL. It is written in the same transaction as the state change it reports,
// so a crash can delay a webhook but never lose it.
//
// Lifecycle: pending (NextAttemptAt set) -> claimed by a deliverer (lease)
// -> delivered, or back to pending with a later NextAttemptAt, or failed
// once the retry window (24 h) is over.
type WebhookEvent struct {
	ID        string
	AccountID string
	URL       string
	// Headers are the customer's extra headers, sent as X-Webhook-<Name>.
	Headers map[string]string
	// Type is the event type in the payload: job.completed, job.failed,
	// batch_job.completed, ...
	Type string
	// SubjectKind and SubjectID name what the payload describes ("job",
	// "batch_job"); the payload is rendered at delivery time.
	SubjectKind   string
	SubjectID     string
	Attempts      int
	NextAttemptAt time.Time
	Created       time.Time
	DeliveredAt   *time.Time
	FailedAt      *time.Time
	LastError     string
}

// WebhookStore persists the outbox.
type WebhookStore interface {
	// EnqueueWebhook inserts a pending event. Codes: ALREADY_EXISTS.
	EnqueueWebhook(ctx context.Context, e *WebhookEvent) error
	// ClaimWebhooks leases up to limit pending events due at now to owner
	// until now+lease; events whose lease expired are claimable again.
	ClaimWebhooks(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]*WebhookEvent, error)
	// FinishWebhook records an attempt by owner: delivered (deliveredAt set),
	// retry (next set) or failed (failedAt set). A lost lease makes it a
	// no-op. Codes: ABORTED when owner no longer holds the lease.
	FinishWebhook(ctx context.Context, id, owner string, attempt WebhookAttempt) error
	// GetWebhook returns one event. Codes: NOT_FOUND.
	GetWebhook(ctx context.Context, id string) (*WebhookEvent, error)
}

// WebhookAttempt is the outcome of one delivery attempt.
type WebhookAttempt struct {
	DeliveredAt *time.Time
	FailedAt    *time.Time
	Next        time.Time
	Error       string
}

// WebhookPayloads renders the JSON body of an event (the API shape of its
// subject, which only the API adapter knows).
type WebhookPayloads interface {
	Render(ctx context.Context, e *WebhookEvent) ([]byte, error)
}

// WebhookPoster sends a POST to a customer URL under the URL rules of
// DESIGN §5 (implemented by safehttp).
type WebhookPoster interface {
	Post(ctx context.Context, url string, header map[string][]string, body []byte) (int, error)
	CheckURL(url string) error
	RequireHTTPS() bool
}

// WebhookSecrets returns the signing secret of an account.
type WebhookSecrets interface {
	GetAccount(ctx context.Context, id string) (*Account, error)
}

// Webhook delivery policy.
const (
	WebhookRetryWindow = 24 * time.Hour
	webhookFirstRetry  = 5 * time.Second
	webhookMaxBackoff  = time.Hour
	webhookLease       = 2 * time.Minute
	maxWebhookHeaders  = 20
)

// ValidateWebhook checks a customer's webhook target when it is submitted,
// so a bad URL is a 400 now rather than a silent failure later. field names
// the request field (webhook.url, webhookUrl).
func ValidateWebhook(p WebhookPoster, field, url string, headers map[string]string) error {
	if err := p.CheckURL(url); err != nil {
		return InvalidField(field, err.Error())
	}
	if p.RequireHTTPS() && !strings.HasPrefix(strings.ToLower(url), "https://") {
		return InvalidField(field, "must be an https URL")
	}
	if len(headers) > maxWebhookHeaders {
		return InvalidField("webhook.extraHeaders", fmt.Sprintf("at most %d headers", maxWebhookHeaders))
	}
	for k, v := range headers {
		if !validHeaderName(k) || strings.ContainsAny(v, "\r\n") || len(v) > 1024 {
			return InvalidField("webhook.extraHeaders", fmt.Sprintf("%q is not a valid header name and value", k))
		}
	}
	return nil
}

func validHeaderName(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for _, r := range k {
		if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// WebhookDeliverer drains the outbox: it signs each payload per the Standard
// Webhooks scheme with the account's secret and retries with exponential
// backoff for 24 hours.
type WebhookDeliverer struct {
	Store    WebhookStore
	Payloads WebhookPayloads
	Poster   WebhookPoster
	Accounts WebhookSecrets
	Clock    Clock
	Log      *slog.Logger
	Owner    string
	// Poll is how often the outbox is read when idle.
	Poll time.Duration
}

// Run delivers until ctx is done.
func (d *WebhookDeliverer) Run(ctx context.Context) {
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
func (d *WebhookDeliverer) DeliverDue(ctx context.Context) (int, error) {
	now := d.Clock.Now()
	events, err := d.Store.ClaimWebhooks(ctx, d.Owner, now, webhookLease, 32)
	if err != nil {
		return 0, err
	}
	for _, e := range events {
		attempt := d.attempt(ctx, e)
		if err := d.Store.FinishWebhook(ctx, e.ID, d.Owner, attempt); err != nil && ErrorCode(err) != Aborted {
			return len(events), err
		}
	}
	return len(events), nil
}

func (d *WebhookDeliverer) attempt(ctx context.Context, e *WebhookEvent) WebhookAttempt {
	now := d.Clock.Now()
	err := d.send(ctx, e, now)
	if err == nil {
		return WebhookAttempt{DeliveredAt: &now}
	}
	msg := err.Error()
	backoff := webhookFirstRetry << min(e.Attempts, 20)
	if backoff > webhookMaxBackoff {
		backoff = webhookMaxBackoff
	}
	next := now.Add(backoff)
	var permanent *permanentError
	if errors.As(err, &permanent) || next.Sub(e.Created) > WebhookRetryWindow {
		d.Log.Warn("webhook abandoned", "event", e.ID, "account", e.AccountID, "attempts", e.Attempts+1, "error", msg)
		return WebhookAttempt{FailedAt: &now, Error: msg}
	}
	return WebhookAttempt{Next: next, Error: msg}
}

type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func (d *WebhookDeliverer) send(ctx context.Context, e *WebhookEvent, now time.Time) error {
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
