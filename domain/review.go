package domain

import (
	"context"
	"time"

	"github.com/contenteval/contenteval/domain/rules"
)

// Human review (docs/review.md): queues fed by job results that match their
// routes, items that reviewers claim and decide.

// ReviewItemState is the API's ReviewItemState.
type ReviewItemState string

// Review item states. An item whose claim expired is open again.
const (
	ReviewOpen    ReviewItemState = "REVIEW_ITEM_STATE_OPEN"
	ReviewClaimed ReviewItemState = "REVIEW_ITEM_STATE_CLAIMED"
	ReviewDecided ReviewItemState = "REVIEW_ITEM_STATE_DECIDED"
)

// Review bounds (docs/review.md#limits).
const (
	MaxReviewQueues         = 100
	MaxReviewRoutes         = 20
	MaxReviewRouteOutcomes  = 3
	MaxReviewNameRunes      = 200
	MaxReviewDescription    = 2000
	MaxReviewComment        = 4000
	MaxReviewDecisionLabels = 100
	MaxReviewRetentionDays  = 3650
	MaxReviewSLAMinutes     = 525600
	MaxReviewPriority       = 1000
	DefaultReviewRetention  = 30
	ReviewClaimTTL          = 10 * time.Minute
)

// ReviewRoute says which job results feed a queue: a section named Label
// (any section when empty) of a job of PolicyID or LabelID, whose score is
// in [MinScore, MaxScore) and whose outcome is one of Outcomes (the
// rules.Outcome names; any when empty).
type ReviewRoute struct {
	PolicyID string   `json:"policyId,omitempty"`
	LabelID  string   `json:"labelId,omitempty"`
	Label    string   `json:"label,omitempty"`
	MinScore float64  `json:"minScore"`
	MaxScore float64  `json:"maxScore"`
	Outcomes []string `json:"outcomes,omitempty"`
}

// ReviewQueue is a queue of review items of one account.
type ReviewQueue struct {
	ID            string
	AccountID     string
	Name          string
	Description   string
	Routes        []ReviewRoute
	Priority      int
	SLAMinutes    int
	WebhookURL    string
	RetentionDays int
	Created       time.Time
	Updated       time.Time
}

// ReviewMatch is what the machine said of one label of a routed result.
type ReviewMatch struct {
	Label   string  `json:"label"`
	Score   float64 `json:"score"`
	Outcome string  `json:"outcome"`
}

// ReviewLabelDecision is a reviewer's outcome for one label.
type ReviewLabelDecision struct {
	Label   string `json:"label"`
	Outcome string `json:"outcome"` // OUTCOME_TRUE or OUTCOME_FALSE
}

// ReviewDecision is what a reviewer decided of an item.
type ReviewDecision struct {
	Labels       []ReviewLabelDecision `json:"labels"`
	Comment      string                `json:"comment,omitempty"`
	AddToDataset bool                  `json:"addToDataset,omitempty"`
	DecidedBy    string                `json:"decidedBy,omitempty"`
	KeyID        string                `json:"keyId,omitempty"`
	Decided      time.Time             `json:"decided"`
}

// ReviewItem is one job result in one queue.
type ReviewItem struct {
	ID             string
	AccountID      string
	QueueID        string
	JobID          string
	JobResultID    string
	Machine        []ReviewMatch
	State          ReviewItemState
	SLADeadline    *time.Time
	Created        time.Time
	ClaimedBy      string
	ClaimToken     string
	ClaimExpiresAt *time.Time
	Decision       *ReviewDecision
	// Content is the retained content, opened; nil once deleted.
	Content *ContentItem
	// ContentExpiresAt is when the content is deleted (set at decision).
	ContentExpiresAt *time.Time
}

// ReviewClaim is who claims: a reviewer key's id and name.
type ReviewClaim struct {
	Token   string
	By      string
	Now     time.Time
	Expires time.Time
}

// ReviewLabelStats counts the decisions of one label.
type ReviewLabelStats struct {
	Label      string
	Decided    int64
	Overturned int64
}

// ReviewStats are a queue's counts.
type ReviewStats struct {
	Open, Claimed, Decided int64
	OldestOpen             *time.Time
	// OldestOpenAge is the age of OldestOpen as of the read.
	OldestOpenAge time.Duration
	SLABreaches   int64
	Labels        []ReviewLabelStats
}

// ReviewGauge is one queue's depth and oldest open item, for the gauges.
type ReviewGauge struct {
	AccountID, QueueID, Name string
	Open                     int64
	OldestOpen               *time.Time
}

// ReviewItemCursor is the keyset position in a queue's items.
type ReviewItemCursor struct {
	Created time.Time `json:"c"`
	ID      string    `json:"i"`
}

// ReviewDecisionWrite is a decision to record with what follows from it
// in the same transaction.
type ReviewDecisionWrite struct {
	AccountID, ItemID, ClaimToken string
	Decision                      ReviewDecision
	// ContentExpiresAt is when the retained content is deleted.
	ContentExpiresAt time.Time
	// Webhook is the queue's decision event, nil without a webhookUrl.
	Webhook *WebhookEvent
}

// ReviewStore persists queues and items.
type ReviewStore interface {
	CreateReviewQueue(ctx context.Context, q *ReviewQueue, max int) error
	GetReviewQueue(ctx context.Context, accountID, id string) (*ReviewQueue, error)
	ListReviewQueues(ctx context.Context, accountID string) ([]*ReviewQueue, error)
	UpdateReviewQueue(ctx context.Context, q *ReviewQueue) error
	DeleteReviewQueue(ctx context.Context, accountID, id string) error
	// ListReviewItems returns up to limit items of the queue in state (all
	// when ""), oldest first, after the cursor, and whether more follow;
	// fewer when their retained content would pass maxBytes (at least one).
	ListReviewItems(ctx context.Context, accountID, queueID string, state ReviewItemState, now time.Time, after *ReviewItemCursor, limit, maxBytes int) ([]*ReviewItem, bool, error)
	GetReviewItem(ctx context.Context, accountID, id string, now time.Time) (*ReviewItem, error)
	// ClaimReviewItem claims the next open item of the queue (of every
	// queue of the account when queueID is ""). Codes: NOT_FOUND when none.
	ClaimReviewItem(ctx context.Context, accountID, queueID string, c ReviewClaim) (*ReviewItem, error)
	// RenewReviewClaim extends, ReleaseReviewClaim gives back and
	// SkipReviewItem gives back behind the others a claim the token holds.
	// Codes: NOT_FOUND, ABORTED (stale token), FAILED_PRECONDITION (decided).
	RenewReviewClaim(ctx context.Context, accountID, id, token string, now, expires time.Time) (*ReviewItem, error)
	ReleaseReviewClaim(ctx context.Context, accountID, id, token string, now time.Time, skip bool) error
	// DecideReviewItem records a decision once. Codes: NOT_FOUND, ABORTED,
	// FAILED_PRECONDITION.
	DecideReviewItem(ctx context.Context, w *ReviewDecisionWrite) (*ReviewItem, error)
	ReviewStats(ctx context.Context, accountID, queueID string, now time.Time, r TimeRange) (*ReviewStats, error)
	// ReviewItemsOfJob reports whether an item of the account points to the job.
	ReviewItemsOfJob(ctx context.Context, accountID, jobID string) (bool, error)
	ReviewGauges(ctx context.Context, now time.Time) ([]ReviewGauge, error)
	// ExpireReviewContent deletes the retained content due at now, and that
	// of items whose job is gone; it returns how many it deleted.
	ExpireReviewContent(ctx context.Context, now time.Time) (int64, error)
}

// ReviewJob is what routing knows of a job whose results are recorded.
type ReviewJob struct {
	ID, AccountID, PolicyID, LabelID string
}

// Matches returns the sections of report that one of the queue's routes
// admits for a result of job, in report order, each once; nil when none.
// It allocates only for a match: routing runs on every recorded result.
func (q *ReviewQueue) Matches(job ReviewJob, report *rules.Report) []ReviewMatch {
	if report == nil {
		return nil
	}
	var out []ReviewMatch
	for i := range report.Sections {
		sec := &report.Sections[i]
		for j := range q.Routes {
			if q.Routes[j].admits(job, sec) {
				out = append(out, ReviewMatch{Label: sec.Name, Score: sec.Score, Outcome: string(sec.Result)})
				break
			}
		}
	}
	return out
}

func (r *ReviewRoute) admits(job ReviewJob, sec *rules.SectionReport) bool {
	switch {
	case r.PolicyID != "" && r.PolicyID != job.PolicyID:
		return false
	case r.LabelID != "" && r.LabelID != job.LabelID:
		return false
	case r.Label != "" && r.Label != sec.Name:
		return false
	case sec.Result != rules.OutcomeFailed && (sec.Score < r.MinScore || sec.Score >= r.MaxScore):
		// A failed section has no score (-1): only its outcome routes it.
		return false
	}
	if len(r.Outcomes) == 0 {
		return true
	}
	for _, o := range r.Outcomes {
		if o == string(sec.Result) {
			return true
		}
	}
	return false
}
