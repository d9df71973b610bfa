package review

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/paging"
)

// Feedback records a reviewer's outcome of one label of a job result as
// a feedback annotation (the live metrics count it).
type Feedback interface {
	RecordFeedback(ctx context.Context, accountID, jobID, jobResultID, label string, expected domain.EvaluationResult, comment string) error
}

// Examples adds a dataset example to a label.
type Examples interface {
	AddExample(ctx context.Context, account *domain.Account, labelID string, content domain.ContentItem, expected domain.EvaluationResult, note string) error
}

// Jobs reads a job of an account.
type Jobs interface {
	GetJob(ctx context.Context, accountID, id string) (*domain.Job, error)
}

// URLChecker vets a webhook URL (safehttp's rules).
type URLChecker interface {
	CheckURL(url string) error
}

// Deps are the ports of the service.
type Deps struct {
	Store    domain.ReviewStore
	Feedback Feedback
	Examples Examples
	Jobs     Jobs
	URLs     URLChecker // nil accepts any http(s) URL
	Clock    domain.Clock
	Tokens   *paging.Tokens
}

// Service serves human review.
type Service struct{ d Deps }

// NewService returns the service.
func NewService(d Deps) *Service { return &Service{d: d} }

// QueueInput is a queue as created or replaced; nil fields take defaults.
type QueueInput struct {
	Name          string
	Description   string
	Routes        []RouteInput
	Priority      *int
	SLAMinutes    *int
	WebhookURL    string
	RetentionDays *int
}

// RouteInput is one route as given.
type RouteInput struct {
	PolicyID, LabelID, Label string
	MinScore, MaxScore       *float64
	Outcomes                 []string
}

// noUpperScore is the maxScore of a route without one: above every score.
const noUpperScore = 2

var routeOutcomes = map[string]bool{"OUTCOME_TRUE": true, "OUTCOME_FALSE": true, "OUTCOME_FAILED": true}

func (s *Service) queueFrom(in QueueInput, q *domain.ReviewQueue) error {
	if n := utf8.RuneCountInString(in.Name); n == 0 || n > domain.MaxReviewNameRunes {
		return domain.InvalidField("name", "must have 1 to "+strconv.Itoa(domain.MaxReviewNameRunes)+" characters")
	}
	if utf8.RuneCountInString(in.Description) > domain.MaxReviewDescription {
		return domain.InvalidField("description", "must have at most "+strconv.Itoa(domain.MaxReviewDescription)+" characters")
	}
	if n := len(in.Routes); n == 0 || n > domain.MaxReviewRoutes {
		return domain.InvalidField("routes", "must have 1 to "+strconv.Itoa(domain.MaxReviewRoutes)+" routes")
	}
	routes := make([]domain.ReviewRoute, len(in.Routes))
	for i, r := range in.Routes {
		f := "routes[" + strconv.Itoa(i) + "]"
		if (r.PolicyID == "") == (r.LabelID == "") {
			return domain.InvalidField(f, "must have exactly one of policyId and labelId")
		}
		if len(r.PolicyID) > 100 || len(r.LabelID) > 100 || utf8.RuneCountInString(r.Label) > domain.MaxReviewNameRunes {
			return domain.InvalidField(f, "has an id or label too long")
		}
		lo, hi := 0.0, float64(noUpperScore)
		if r.MinScore != nil {
			lo = *r.MinScore
		}
		if r.MaxScore != nil {
			hi = *r.MaxScore
		}
		if math.IsNaN(lo) || math.IsNaN(hi) || lo < 0 || lo > 1 || hi <= lo || hi > noUpperScore {
			return domain.InvalidField(f+".minScore", "must be 0..1 and below maxScore (at most 2; unset means no upper bound)")
		}
		if len(r.Outcomes) > domain.MaxReviewRouteOutcomes {
			return domain.InvalidField(f+".outcomes", "has more than 3 outcomes")
		}
		seen := map[string]bool{}
		for _, o := range r.Outcomes {
			if !routeOutcomes[o] || seen[o] {
				return domain.InvalidField(f+".outcomes", "must be distinct OUTCOME_TRUE, OUTCOME_FALSE or OUTCOME_FAILED")
			}
			seen[o] = true
		}
		routes[i] = domain.ReviewRoute{PolicyID: r.PolicyID, LabelID: r.LabelID, Label: r.Label, MinScore: lo, MaxScore: hi, Outcomes: r.Outcomes}
	}
	q.Name, q.Description, q.Routes = in.Name, in.Description, routes
	q.Priority, q.SLAMinutes, q.RetentionDays = 0, 0, domain.DefaultReviewRetention
	if p := in.Priority; p != nil {
		if *p < 0 || *p > domain.MaxReviewPriority {
			return domain.InvalidField("priority", "must be 0 to "+strconv.Itoa(domain.MaxReviewPriority))
		}
		q.Priority = *p
	}
	if m := in.SLAMinutes; m != nil {
		if *m < 0 || *m > domain.MaxReviewSLAMinutes {
			return domain.InvalidField("slaMinutes", "must be 0 (none) to "+strconv.Itoa(domain.MaxReviewSLAMinutes))
		}
		q.SLAMinutes = *m
	}
	if d := in.RetentionDays; d != nil {
		if *d < 1 || *d > domain.MaxReviewRetentionDays {
			return domain.InvalidField("retentionDays", "must be 1 to "+strconv.Itoa(domain.MaxReviewRetentionDays))
		}
		q.RetentionDays = *d
	}
	if in.WebhookURL != "" {
		if len(in.WebhookURL) > 2048 {
			return domain.InvalidField("webhookUrl", "must be at most 2048 bytes")
		}
		if s.d.URLs != nil {
			if err := s.d.URLs.CheckURL(in.WebhookURL); err != nil {
				return domain.InvalidField("webhookUrl", err.Error())
			}
		}
	}
	q.WebhookURL = in.WebhookURL
	return nil
}

// CreateQueue creates a queue. Codes: INVALID_ARGUMENT, ALREADY_EXISTS,
// FAILED_PRECONDITION (too many queues).
func (s *Service) CreateQueue(ctx context.Context, accountID string, in QueueInput) (*domain.ReviewQueue, error) {
	now := s.d.Clock.Now()
	q := &domain.ReviewQueue{ID: domain.NewID(), AccountID: accountID, Created: now, Updated: now}
	if err := s.queueFrom(in, q); err != nil {
		return nil, err
	}
	if err := s.d.Store.CreateReviewQueue(ctx, q, domain.MaxReviewQueues); err != nil {
		return nil, err
	}
	return q, nil
}

// GetQueue returns a queue. Codes: NOT_FOUND.
func (s *Service) GetQueue(ctx context.Context, accountID, id string) (*domain.ReviewQueue, error) {
	return s.d.Store.GetReviewQueue(ctx, accountID, id)
}

// ListQueues returns the account's queues (at most domain.MaxReviewQueues).
func (s *Service) ListQueues(ctx context.Context, accountID string) ([]*domain.ReviewQueue, error) {
	return s.d.Store.ListReviewQueues(ctx, accountID)
}

// UpdateQueue replaces a queue's settings with in. Codes: as CreateQueue,
// NOT_FOUND.
func (s *Service) UpdateQueue(ctx context.Context, accountID, id string, in QueueInput) (*domain.ReviewQueue, error) {
	q, err := s.d.Store.GetReviewQueue(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if err := s.queueFrom(in, q); err != nil {
		return nil, err
	}
	q.Updated = s.d.Clock.Now()
	if err := s.d.Store.UpdateReviewQueue(ctx, q); err != nil {
		return nil, err
	}
	return q, nil
}

// DeleteQueue deletes a queue and its items. Codes: NOT_FOUND.
func (s *Service) DeleteQueue(ctx context.Context, accountID, id string) error {
	return s.d.Store.DeleteReviewQueue(ctx, accountID, id)
}

// ItemPage is one page of ListItems.
type ItemPage struct {
	Items         []*domain.ReviewItem
	NextPageToken string
}

// Item page sizes.
const (
	DefaultItemPageSize = 50
	MaxItemPageSize     = 500
	// MaxItemPageBytes bounds the retained content a page of items holds:
	// a page of 500 images could otherwise be 10 GiB.
	MaxItemPageBytes = 16 << 20
)

// ListItems returns a page of a queue's items in state ("" for all),
// oldest first. Codes: NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) ListItems(ctx context.Context, accountID, queueID string, state domain.ReviewItemState, pageSize *int32, pageToken string) (*ItemPage, error) {
	switch state {
	case "", domain.ReviewOpen, domain.ReviewClaimed, domain.ReviewDecided:
	default:
		return nil, domain.InvalidField("state", "unknown value")
	}
	q := paging.Query{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: DefaultItemPageSize, Max: MaxItemPageSize, Scope: "review-items\x00" + accountID + "\x00" + queueID + "\x00" + string(state)}
	check := func() error {
		_, err := s.d.Store.GetReviewQueue(ctx, accountID, queueID)
		return err
	}
	now := s.d.Clock.Now()
	items, next, err := paging.KeysetBounded(s.d.Tokens, q, check, func(after *domain.ReviewItemCursor, limit int) ([]*domain.ReviewItem, bool, error) {
		return s.d.Store.ListReviewItems(ctx, accountID, queueID, state, now, after, limit, MaxItemPageBytes)
	}, func(it *domain.ReviewItem) domain.ReviewItemCursor {
		return domain.ReviewItemCursor{Created: it.Created, ID: it.ID}
	})
	if err != nil {
		return nil, err
	}
	return &ItemPage{Items: items, NextPageToken: next}, nil
}

// GetItem returns an item. Codes: NOT_FOUND.
func (s *Service) GetItem(ctx context.Context, accountID, id string) (*domain.ReviewItem, error) {
	return s.d.Store.GetReviewItem(ctx, accountID, id, s.d.Clock.Now())
}

// Claim claims the next open item of a queue, or of every queue of the
// account when queueID is "" (docs/review.md#claims), for the reviewer
// named by. Codes: NOT_FOUND (no such queue, or nothing open).
func (s *Service) Claim(ctx context.Context, accountID, queueID, by string) (*domain.ReviewItem, error) {
	if queueID != "" {
		if _, err := s.d.Store.GetReviewQueue(ctx, accountID, queueID); err != nil {
			return nil, err
		}
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	return s.d.Store.ClaimReviewItem(ctx, accountID, queueID, domain.ReviewClaim{
		Token: "rct_" + hex.EncodeToString(raw[:]), By: by, Now: now, Expires: now.Add(domain.ReviewClaimTTL),
	})
}

func checkToken(token string) error {
	if token == "" || len(token) > 100 {
		return domain.InvalidField("claimToken", "is required (at most 100 bytes)")
	}
	return nil
}

// Renew extends a claim by the claim time from now. Codes: NOT_FOUND,
// ABORTED (stale token), FAILED_PRECONDITION (decided).
func (s *Service) Renew(ctx context.Context, accountID, id, token string) (*domain.ReviewItem, error) {
	if err := checkToken(token); err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	return s.d.Store.RenewReviewClaim(ctx, accountID, id, token, now, now.Add(domain.ReviewClaimTTL))
}

// Release gives a claim back; skip also moves the item behind the others.
// Codes: as Renew.
func (s *Service) Release(ctx context.Context, accountID, id, token string, skip bool) error {
	if err := checkToken(token); err != nil {
		return err
	}
	return s.d.Store.ReleaseReviewClaim(ctx, accountID, id, token, s.d.Clock.Now(), skip)
}

// DecisionInput is a decision as given.
type DecisionInput struct {
	ClaimToken   string
	Labels       []domain.ReviewLabelDecision
	Comment      string
	AddToDataset bool
}

// Reviewer is who decides.
type Reviewer struct {
	Account     *domain.Account
	KeyID, Name string
}

// Decide records a decision once, with the feedback annotations it makes,
// and a dataset example when asked on a label-first job. Codes:
// INVALID_ARGUMENT, NOT_FOUND, ABORTED (stale token), FAILED_PRECONDITION
// (decided already).
func (s *Service) Decide(ctx context.Context, who Reviewer, id string, in DecisionInput) (*domain.ReviewItem, error) {
	if err := checkToken(in.ClaimToken); err != nil {
		return nil, err
	}
	if n := len(in.Labels); n == 0 || n > domain.MaxReviewDecisionLabels {
		return nil, domain.InvalidField("labels", "must have 1 to "+strconv.Itoa(domain.MaxReviewDecisionLabels)+" labels")
	}
	seen := map[string]bool{}
	for i, l := range in.Labels {
		f := "labels[" + strconv.Itoa(i) + "]"
		if l.Label == "" || utf8.RuneCountInString(l.Label) > domain.MaxReviewNameRunes || seen[l.Label] {
			return nil, domain.InvalidField(f+".label", "must be a distinct label name of 1 to 200 characters")
		}
		seen[l.Label] = true
		if l.Outcome != "OUTCOME_TRUE" && l.Outcome != "OUTCOME_FALSE" {
			return nil, domain.InvalidField(f+".outcome", "must be OUTCOME_TRUE or OUTCOME_FALSE")
		}
	}
	if utf8.RuneCountInString(in.Comment) > domain.MaxReviewComment {
		return nil, domain.InvalidField("comment", "must have at most "+strconv.Itoa(domain.MaxReviewComment)+" characters")
	}
	accountID := who.Account.ID
	now := s.d.Clock.Now()
	it, err := s.d.Store.GetReviewItem(ctx, accountID, id, now)
	if err != nil {
		return nil, err
	}
	// Checked before the feedback is written; DecideReviewItem checks
	// again, atomically, and is what makes a decision happen once.
	switch {
	case it.State == domain.ReviewDecided:
		return nil, domain.Errorf(domain.FailedPrecondition, "review item %q is already decided", id)
	case it.State != domain.ReviewClaimed || it.ClaimToken != in.ClaimToken:
		return nil, domain.Errorf(domain.Aborted, "the claim token of review item %q is stale: the claim expired or was given back", id)
	}
	q, err := s.d.Store.GetReviewQueue(ctx, accountID, it.QueueID)
	if err != nil {
		return nil, err
	}
	for _, l := range in.Labels {
		if err := s.d.Feedback.RecordFeedback(ctx, accountID, it.JobID, it.JobResultID, l.Label, evaluationResult(l.Outcome), in.Comment); err != nil {
			return nil, err
		}
	}
	w := &domain.ReviewDecisionWrite{AccountID: accountID, ItemID: id, ClaimToken: in.ClaimToken,
		Decision: domain.ReviewDecision{Labels: in.Labels, Comment: in.Comment, AddToDataset: in.AddToDataset,
			DecidedBy: who.Name, KeyID: who.KeyID, Decided: now},
		ContentExpiresAt: now.Add(time.Duration(q.RetentionDays) * 24 * time.Hour)}
	if q.WebhookURL != "" {
		w.Webhook = &domain.WebhookEvent{ID: "msg_" + domain.NewID(), AccountID: accountID, URL: q.WebhookURL,
			Type: "review_item.decided", SubjectKind: "review_item", SubjectID: id, Created: now}
	}
	decided, err := s.d.Store.DecideReviewItem(ctx, w)
	if err != nil {
		return nil, err
	}
	if in.AddToDataset {
		if err := s.addExample(ctx, who.Account, decided, in); err != nil {
			return nil, err
		}
	}
	return decided, nil
}

// addExample adds the item's content as an example of the job's label
// (label-first jobs; a policy-first job has no label to add it to).
func (s *Service) addExample(ctx context.Context, account *domain.Account, it *domain.ReviewItem, in DecisionInput) error {
	j, err := s.d.Jobs.GetJob(ctx, account.ID, it.JobID)
	if err != nil {
		return err
	}
	if j.LabelID == "" {
		return domain.Errorf(domain.FailedPrecondition, "addToDataset needs a label-first job; the decision is recorded")
	}
	if it.Content == nil {
		return domain.Errorf(domain.FailedPrecondition, "the item's content is no longer retained; the decision is recorded")
	}
	// A label-first job has one section, its label's: its decision is
	// the example's outcome.
	outcome := in.Labels[0].Outcome
	for _, m := range it.Machine {
		for _, l := range in.Labels {
			if l.Label == m.Label {
				outcome = l.Outcome
			}
		}
	}
	return s.d.Examples.AddExample(ctx, account, j.LabelID, *it.Content, evaluationResult(outcome), in.Comment)
}

func evaluationResult(outcome string) domain.EvaluationResult {
	if outcome == "OUTCOME_TRUE" {
		return domain.EvaluationResultTrue
	}
	return domain.EvaluationResultFalse
}

// Stats returns a queue's counts; since/until bound the decisions.
// Codes: NOT_FOUND.
func (s *Service) Stats(ctx context.Context, accountID, queueID string, r domain.TimeRange) (*domain.ReviewStats, error) {
	if _, err := s.d.Store.GetReviewQueue(ctx, accountID, queueID); err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	st, err := s.d.Store.ReviewStats(ctx, accountID, queueID, now, r)
	if err != nil {
		return nil, err
	}
	if st.OldestOpen != nil {
		st.OldestOpenAge = max(now.Sub(*st.OldestOpen), 0)
	}
	return st, nil
}

// CanReadJob reports whether a reviewer key of the account may read the
// job: an item of the account points to it.
func (s *Service) CanReadJob(ctx context.Context, accountID, jobID string) (bool, error) {
	return s.d.Store.ReviewItemsOfJob(ctx, accountID, jobID)
}

// Gauges returns every queue's depth and oldest open item.
func (s *Service) Gauges(ctx context.Context) ([]domain.ReviewGauge, time.Time, error) {
	now := s.d.Clock.Now()
	g, err := s.d.Store.ReviewGauges(ctx, now)
	return g, now, err
}
