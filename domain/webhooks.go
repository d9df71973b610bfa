package domain

import (
	"context"
	"time"
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
	// TraceParent and TraceState are the W3C trace context of the work
	// that wrote the event (empty when tracing is off): its delivery, later
	// and maybe in another process, continues that trace.
	TraceParent string
	TraceState  string
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
// docs/api.md#url-fetching (implemented by safehttp).
type WebhookPoster interface {
	Post(ctx context.Context, url string, header map[string][]string, body []byte) (int, error)
	CheckURL(url string) error
	RequireHTTPS() bool
}

// WebhookSecrets returns the signing secret of an account.
type WebhookSecrets interface {
	GetAccount(ctx context.Context, id string) (*Account, error)
}

// WebhookRetryWindow is how long a webhook is retried before it is
// abandoned.
const WebhookRetryWindow = 24 * time.Hour
