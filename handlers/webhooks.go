package handlers

import (
	"context"
	"encoding/json"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/gen"
)

// WebhookPayloads renders outbox events as the API shapes their receivers
// get (docs/api.md#webhooks): {"type", "job": Job}. The subject is read at delivery
// time; it is terminal, so it no longer changes.
type WebhookPayloads struct {
	Jobs *jobs.Service
	// Others render the subject kinds beyond jobs (batch jobs), keyed by
	// WebhookEvent.SubjectKind.
	Others map[string]func(ctx context.Context, e *domain.WebhookEvent) ([]byte, error)
}

var _ domain.WebhookPayloads = (*WebhookPayloads)(nil)

// Render implements domain.WebhookPayloads.
func (w *WebhookPayloads) Render(ctx context.Context, e *domain.WebhookEvent) ([]byte, error) {
	if e.SubjectKind == "job" {
		j, err := w.Jobs.Get(ctx, &domain.Account{ID: e.AccountID}, e.SubjectID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(struct {
			Type string  `json:"type"`
			Job  gen.Job `json:"job"`
		}{e.Type, toAPIJob(j)})
	}
	if render := w.Others[e.SubjectKind]; render != nil {
		return render(ctx, e)
	}
	return nil, domain.Errorf(domain.Internal, "no webhook payload for %q events", e.SubjectKind)
}
