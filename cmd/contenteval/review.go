package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/quality"
	"github.com/contenteval/contenteval/domain/review"
	"github.com/contenteval/contenteval/handlers"
	"github.com/contenteval/contenteval/persistence"
)

// openReview builds the human review service (docs/review.md), its
// decision webhook payloads and its gauges.
func (m *Main) openReview() {
	m.DB.KeepReviewMediaIn(m.Blobs)
	m.Review = review.NewService(review.Deps{
		Store:    persistence.NewReview(m.DB),
		Feedback: reviewFeedback{m.LabelEvaluation},
		Examples: reviewExamples{m.Quality},
		Jobs:     persistence.NewJobs(m.DB),
		URLs:     m.URLs,
		Clock:    m.Clock,
		Tokens:   paging.NewTokens(m.Keys.DeriveSecret("contenteval/page-tokens/review")),
	})
	if m.Webhooks != nil {
		if p, ok := m.Webhooks.Payloads.(*handlers.WebhookPayloads); ok {
			if p.Others == nil {
				p.Others = map[string]func(context.Context, *domain.WebhookEvent) ([]byte, error){}
			}
			p.Others["review_item"] = handlers.ReviewWebhook(m.Review)
		}
	}
	m.Registry.MustRegister(&reviewGauges{svc: m.Review})
}

// reviewFeedback records decisions as feedback annotations.
type reviewFeedback struct{ svc *labels.EvaluationService }

func (f reviewFeedback) RecordFeedback(ctx context.Context, accountID, jobID, jobResultID, label string, expected domain.EvaluationResult, comment string) error {
	_, err := f.svc.CreateFeedback(ctx, accountID, jobID, labels.NewFeedback{JobResultID: jobResultID, Label: label, Expected: expected, Comment: comment})
	return err
}

// reviewExamples adds decided content to a label's dataset.
type reviewExamples struct{ svc *quality.Service }

func (e reviewExamples) AddExample(ctx context.Context, account *domain.Account, labelID string, c domain.ContentItem, expected domain.EvaluationResult, note string) error {
	in := domain.ContentInput{Metadata: c.Metadata}
	switch c.Kind {
	case domain.ContentText:
		in.Text = &c.Text
	case domain.ContentImage:
		in.Image = &c.Bytes
	case domain.ContentImageURL:
		in.ImageURL = &c.URL
	default:
		return domain.Errorf(domain.FailedPrecondition, "dataset examples are text or images; the decision is recorded")
	}
	_, err := e.svc.CreateExamples(ctx, account, labelID, []quality.NewExample{{Content: in, Expected: expected, Note: note}})
	return err
}

var (
	reviewOpenDesc = prometheus.NewDesc("contenteval_review_open_items",
		"Open items of a review queue (claims expired count as open).", []string{"account", "queue"}, nil)
	reviewOldestDesc = prometheus.NewDesc("contenteval_review_oldest_open_age_seconds",
		"Age of the oldest open item of a review queue; 0 when none is open.", []string{"account", "queue"}, nil)
)

// reviewGauges reads the queues' depth and oldest open item at scrape.
type reviewGauges struct{ svc *review.Service }

func (g *reviewGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- reviewOpenDesc
	ch <- reviewOldestDesc
}

func (g *reviewGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gauges, now, err := g.svc.Gauges(ctx)
	if err != nil {
		return
	}
	for _, q := range gauges {
		ch <- prometheus.MustNewConstMetric(reviewOpenDesc, prometheus.GaugeValue, float64(q.Open), q.AccountID, q.QueueID)
		age := 0.0
		if q.OldestOpen != nil {
			age = max(now.Sub(*q.OldestOpen).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(reviewOldestDesc, prometheus.GaugeValue, age, q.AccountID, q.QueueID)
	}
}

// reviewOffloadPoll is how often a worker looks for retained review content
// to move to the blob store (persistence.Review.OffloadReviewContent): the
// content is readable from its row until then.
const reviewOffloadPoll = 5 * time.Second

// runReviewOffload moves retained review content that is not text to the
// blob store in the background (roles all and worker).
func (m *Main) runReviewOffload(ctx context.Context) {
	store := persistence.NewReview(m.DB)
	m.workers.Add(1)
	go func() {
		defer m.workers.Done()
		t := time.NewTicker(reviewOffloadPoll)
		defer t.Stop()
		for {
			if n, err := store.OffloadReviewContent(ctx); err != nil && ctx.Err() == nil {
				m.Log.Warn("review content not moved to the blob store; it stays in the database until the next try", "error", err.Error())
			} else if n > 0 {
				m.Log.Debug("review content moved to the blob store", "items", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
