package batches

import (
	"time"

	"github.com/contenteval/contenteval/domain"
)

// batchWebhook returns the outbox event of a terminal transition of b, or
// nil when b has no webhook URL.
func batchWebhook(b *domain.BatchJob, to domain.BatchState, now time.Time) *domain.WebhookEvent {
	if b.WebhookURL == "" {
		return nil
	}
	typ := domain.WebhookBatchCompleted
	switch to {
	case domain.BatchError:
		typ = domain.WebhookBatchFailed
	case domain.BatchCancelled:
		typ = domain.WebhookBatchCancelled
	}
	return &domain.WebhookEvent{
		ID: domain.NewID(), AccountID: b.AccountID, URL: b.WebhookURL, Type: typ,
		SubjectKind: "batch_job", SubjectID: b.ID, Created: now, NextAttemptAt: now,
	}
}

// Blob keys of a batch's files. Each upload gets its own key so that a
// re-upload racing the start of processing can never change the file a
// worker has begun to read.
func batchInputKey(batchID, uploadID string) string {
	return "batches/" + batchID + "/input-" + uploadID
}

// batchDirectInputKey is where an S3 presigned upload puts the file.
func batchDirectInputKey(batchID string) string { return "batches/" + batchID + "/input" }

func batchOutputKey(batchID string) string { return "batches/" + batchID + "/output.jsonl" }
