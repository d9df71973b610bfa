package handlers

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/review"
	"github.com/contenteval/contenteval/gen"
)

// Human review (docs/review.md): the API shapes of queues and items.

// allQueues is the queueId that claims across every queue of the account.
const allQueues = "-"

func toDomainRoutes(rs []gen.ReviewRoute) []review.RouteInput {
	out := make([]review.RouteInput, len(rs))
	for i, r := range rs {
		out[i] = review.RouteInput{PolicyID: deref(r.PolicyId), LabelID: deref(r.LabelId), Label: deref(r.Label),
			MinScore: r.MinScore, MaxScore: r.MaxScore}
		if r.Outcomes != nil {
			for _, o := range *r.Outcomes {
				out[i].Outcomes = append(out[i].Outcomes, string(o))
			}
		}
	}
	return out
}

func intPtr(p *int32) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

func toAPIReviewQueue(q *domain.ReviewQueue) gen.ReviewQueue {
	routes := make([]gen.ReviewRoute, len(q.Routes))
	for i, r := range q.Routes {
		routes[i] = gen.ReviewRoute{PolicyId: nonEmpty(r.PolicyID), LabelId: nonEmpty(r.LabelID), Label: nonEmpty(r.Label),
			MinScore: ptr(r.MinScore), MaxScore: ptr(r.MaxScore)}
		if len(r.Outcomes) > 0 {
			os := make([]gen.Outcome, len(r.Outcomes))
			for j, o := range r.Outcomes {
				os[j] = gen.Outcome(o)
			}
			routes[i].Outcomes = &os
		}
	}
	return gen.ReviewQueue{QueueId: q.ID, Name: q.Name, Description: q.Description, Routes: routes,
		Priority: int32(q.Priority), SlaMinutes: int32(q.SLAMinutes), WebhookUrl: nonEmpty(q.WebhookURL),
		RetentionDays: int32(q.RetentionDays), Created: q.Created, Updated: q.Updated}
}

func toAPIContentItem(c *domain.ContentItem) gen.ContentData {
	out := gen.ContentData{Captions: nonEmpty(c.Captions), Metadata: stringMap(c.Metadata)}
	switch c.Kind {
	case domain.ContentText:
		out.Text = ptr(c.Text)
	case domain.ContentImage:
		out.Image = ptr(c.Bytes)
	case domain.ContentImageURL:
		out.ImageUrl = ptr(c.URL)
	case domain.ContentVideoURL:
		out.VideoUrl = ptr(c.URL)
	case domain.ContentAudioURL:
		out.AudioUrl = ptr(c.URL)
	case domain.ContentVideo:
		out.Video = ptr(c.Bytes)
	case domain.ContentAudio:
		out.Audio = ptr(c.Bytes)
	}
	return out
}

func toAPIReviewItem(it *domain.ReviewItem) gen.ReviewItem {
	labels := make([]gen.ReviewMatch, len(it.Machine))
	for i, m := range it.Machine {
		labels[i] = gen.ReviewMatch{Label: m.Label, Score: m.Score, Outcome: gen.Outcome(m.Outcome)}
	}
	out := gen.ReviewItem{ReviewItemId: it.ID, QueueId: it.QueueID, JobUuid: it.JobID, JobResultId: it.JobResultID,
		Labels: labels, State: gen.ReviewItemState(it.State), SlaDeadline: it.SLADeadline, Created: it.Created,
		ClaimedBy: nonEmpty(it.ClaimedBy), ClaimExpiresAt: it.ClaimExpiresAt, ContentExpiresAt: it.ContentExpiresAt}
	if it.Content != nil {
		out.ContentData = &[]gen.ContentData{toAPIContentItem(it.Content)}
	}
	if d := it.Decision; d != nil {
		ls := make([]gen.ReviewLabelDecision, len(d.Labels))
		for i, l := range d.Labels {
			ls[i] = gen.ReviewLabelDecision{Label: l.Label, Outcome: gen.Outcome(l.Outcome)}
		}
		out.Decision = &gen.ReviewDecision{Labels: ls, Comment: nonEmpty(d.Comment), AddToDataset: ptr(d.AddToDataset),
			DecidedBy: d.DecidedBy, Decided: d.Decided}
		out.DecidedBy = ptr(d.DecidedBy)
	}
	return out
}

// withReport adds the report and the hits of the item's job result, when
// the job and the result are still there.
func (s *Server) withReport(ctx context.Context, it *domain.ReviewItem, out *gen.ReviewItem) {
	j, err := s.deps.Jobs.Get(ctx, AccountFrom(ctx), it.JobID)
	if err != nil {
		return
	}
	for _, r := range j.Results {
		if r.ID == it.JobResultID {
			out.Report = toAPIReport(j, r)
		}
	}
	page, err := s.deps.LabelEvaluation.ListJobLabelHits(ctx, AccountFrom(ctx).ID, labels.ListJobLabelHitsRequest{
		JobID: it.JobID, JobResultID: it.JobResultID, PageSize: ptr(int32(maxItemHits))})
	if err != nil {
		return
	}
	hits := make([]gen.LabelHit, len(page.Hits))
	for i, h := range page.Hits {
		hits[i] = toAPILabelHit(h)
	}
	out.Hits = &hits
}

// maxItemHits bounds the hits an item carries.
const maxItemHits = 1000

// ListReviewQueues returns the account's queues.
func (s *Server) ListReviewQueues(ctx context.Context, _ gen.ListReviewQueuesRequestObject) (gen.ListReviewQueuesResponseObject, error) {
	qs, err := s.deps.Review.ListQueues(ctx, AccountFrom(ctx).ID)
	if err != nil {
		return nil, err
	}
	out := make([]gen.ReviewQueue, len(qs))
	for i, q := range qs {
		out[i] = toAPIReviewQueue(q)
	}
	return gen.ListReviewQueues200JSONResponse{ReviewQueues: out}, nil
}

// CreateReviewQueue creates a queue.
func (s *Server) CreateReviewQueue(ctx context.Context, req gen.CreateReviewQueueRequestObject) (gen.CreateReviewQueueResponseObject, error) {
	b := req.Body
	q, err := s.deps.Review.CreateQueue(ctx, AccountFrom(ctx).ID, review.QueueInput{
		Name: b.Name, Description: deref(b.Description), Routes: toDomainRoutes(b.Routes),
		Priority: intPtr(b.Priority), SLAMinutes: intPtr(b.SlaMinutes), WebhookURL: deref(b.WebhookUrl), RetentionDays: intPtr(b.RetentionDays),
	})
	if err != nil {
		return nil, err
	}
	return gen.CreateReviewQueue200JSONResponse{ReviewQueue: toAPIReviewQueue(q)}, nil
}

// GetReviewQueue returns a queue.
func (s *Server) GetReviewQueue(ctx context.Context, req gen.GetReviewQueueRequestObject) (gen.GetReviewQueueResponseObject, error) {
	q, err := s.deps.Review.GetQueue(ctx, AccountFrom(ctx).ID, req.QueueId)
	if err != nil {
		return nil, err
	}
	return gen.GetReviewQueue200JSONResponse{ReviewQueue: toAPIReviewQueue(q)}, nil
}

// UpdateReviewQueue replaces the fields given of a queue.
func (s *Server) UpdateReviewQueue(ctx context.Context, req gen.UpdateReviewQueueRequestObject) (gen.UpdateReviewQueueResponseObject, error) {
	accountID := AccountFrom(ctx).ID
	q, err := s.deps.Review.GetQueue(ctx, accountID, req.QueueId)
	if err != nil {
		return nil, err
	}
	in := review.QueueInput{Name: q.Name, Description: q.Description, Priority: &q.Priority, SLAMinutes: &q.SLAMinutes,
		WebhookURL: q.WebhookURL, RetentionDays: &q.RetentionDays}
	for _, r := range q.Routes {
		in.Routes = append(in.Routes, review.RouteInput{PolicyID: r.PolicyID, LabelID: r.LabelID, Label: r.Label,
			MinScore: ptr(r.MinScore), MaxScore: ptr(r.MaxScore), Outcomes: r.Outcomes})
	}
	b := req.Body
	if b.Name != nil {
		in.Name = *b.Name
	}
	if b.Description != nil {
		in.Description = *b.Description
	}
	if b.Routes != nil {
		in.Routes = toDomainRoutes(*b.Routes)
	}
	if b.Priority != nil {
		in.Priority = intPtr(b.Priority)
	}
	if b.SlaMinutes != nil {
		in.SLAMinutes = intPtr(b.SlaMinutes)
	}
	if b.WebhookUrl != nil {
		in.WebhookURL = *b.WebhookUrl
	}
	if b.RetentionDays != nil {
		in.RetentionDays = intPtr(b.RetentionDays)
	}
	q, err = s.deps.Review.UpdateQueue(ctx, accountID, req.QueueId, in)
	if err != nil {
		return nil, err
	}
	return gen.UpdateReviewQueue200JSONResponse{ReviewQueue: toAPIReviewQueue(q)}, nil
}

// DeleteReviewQueue deletes a queue and its items.
func (s *Server) DeleteReviewQueue(ctx context.Context, req gen.DeleteReviewQueueRequestObject) (gen.DeleteReviewQueueResponseObject, error) {
	if err := s.deps.Review.DeleteQueue(ctx, AccountFrom(ctx).ID, req.QueueId); err != nil {
		return nil, err
	}
	return gen.DeleteReviewQueue200JSONResponse{QueueId: req.QueueId, Deleted: true}, nil
}

// ListReviewItems returns a page of a queue's items.
func (s *Server) ListReviewItems(ctx context.Context, req gen.ListReviewItemsRequestObject) (gen.ListReviewItemsResponseObject, error) {
	var state domain.ReviewItemState
	if req.Params.State != nil {
		state = domain.ReviewItemState(*req.Params.State)
	}
	page, err := s.deps.Review.ListItems(ctx, AccountFrom(ctx).ID, req.QueueId, state, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	out := make([]gen.ReviewItem, len(page.Items))
	for i, it := range page.Items {
		out[i] = toAPIReviewItem(it)
	}
	return gen.ListReviewItems200JSONResponse{ReviewItems: out, NextPageToken: nonEmpty(page.NextPageToken)}, nil
}

// ClaimReviewItem claims the next open item of a queue, or of every queue.
func (s *Server) ClaimReviewItem(ctx context.Context, req gen.ClaimReviewItemRequestObject) (gen.ClaimReviewItemResponseObject, error) {
	queueID := req.QueueId
	if queueID == allQueues {
		queueID = ""
	}
	c, _ := CallerFrom(ctx)
	it, err := s.deps.Review.Claim(ctx, AccountFrom(ctx).ID, queueID, reviewerName(c.KeyName, c.KeyID))
	if err != nil {
		return nil, err
	}
	return gen.ClaimReviewItem200JSONResponse(s.claimResponse(ctx, it)), nil
}

func (s *Server) claimResponse(ctx context.Context, it *domain.ReviewItem) gen.ReviewClaimResponse {
	out := toAPIReviewItem(it)
	s.withReport(ctx, it, &out)
	return gen.ReviewClaimResponse{ReviewItem: out, ClaimToken: it.ClaimToken, ClaimExpiresAt: deref(it.ClaimExpiresAt)}
}

// reviewerName is what claims and decisions record of a key: its name,
// or its id when it has none.
func reviewerName(name, keyID string) string {
	if name != "" {
		return name
	}
	return keyID
}

// GetReviewQueueStats returns a queue's counts.
func (s *Server) GetReviewQueueStats(ctx context.Context, req gen.GetReviewQueueStatsRequestObject) (gen.GetReviewQueueStatsResponseObject, error) {
	p := req.Params
	if p.Since != nil && p.Until != nil && !p.Until.After(*p.Since) {
		return nil, domain.InvalidField("until", "must be after since")
	}
	st, err := s.deps.Review.Stats(ctx, AccountFrom(ctx).ID, req.QueueId, domain.TimeRange{Start: p.Since, End: p.Until})
	if err != nil {
		return nil, err
	}
	out := gen.GetReviewQueueStats200JSONResponse{Open: int32(st.Open), Claimed: int32(st.Claimed), Decided: int32(st.Decided),
		SlaBreaches: int32(st.SLABreaches), Labels: []gen.ReviewLabelStats{}}
	if st.OldestOpen != nil {
		out.OldestOpenAge = ptr(strconv.FormatFloat(st.OldestOpenAge.Seconds(), 'f', -1, 64) + "s")
	}
	for _, l := range st.Labels {
		ls := gen.ReviewLabelStats{Label: l.Label, Decided: int32(l.Decided), Overturned: int32(l.Overturned)}
		if l.Decided > 0 {
			ls.OverturnRate = ptr(float64(l.Overturned) / float64(l.Decided))
		}
		out.Labels = append(out.Labels, ls)
	}
	return out, nil
}

// GetReviewItem returns an item with its report.
func (s *Server) GetReviewItem(ctx context.Context, req gen.GetReviewItemRequestObject) (gen.GetReviewItemResponseObject, error) {
	it, err := s.deps.Review.GetItem(ctx, AccountFrom(ctx).ID, req.ReviewItemId)
	if err != nil {
		return nil, err
	}
	out := toAPIReviewItem(it)
	s.withReport(ctx, it, &out)
	return gen.GetReviewItem200JSONResponse{ReviewItem: out}, nil
}

// DecideReviewItem records a decision.
func (s *Server) DecideReviewItem(ctx context.Context, req gen.DecideReviewItemRequestObject) (gen.DecideReviewItemResponseObject, error) {
	b := req.Body
	in := review.DecisionInput{ClaimToken: b.ClaimToken, Comment: deref(b.Comment), AddToDataset: deref(b.AddToDataset)}
	for _, l := range b.Labels {
		in.Labels = append(in.Labels, domain.ReviewLabelDecision{Label: l.Label, Outcome: string(l.Outcome)})
	}
	c, _ := CallerFrom(ctx)
	it, err := s.deps.Review.Decide(ctx, review.Reviewer{Account: AccountFrom(ctx), KeyID: c.KeyID, Name: reviewerName(c.KeyName, c.KeyID)}, req.ReviewItemId, in)
	if err != nil {
		return nil, err
	}
	return gen.DecideReviewItem200JSONResponse{ReviewItem: toAPIReviewItem(it)}, nil
}

// ReleaseReviewItem gives a claim back.
func (s *Server) ReleaseReviewItem(ctx context.Context, req gen.ReleaseReviewItemRequestObject) (gen.ReleaseReviewItemResponseObject, error) {
	if err := s.deps.Review.Release(ctx, AccountFrom(ctx).ID, req.ReviewItemId, req.Body.ClaimToken, false); err != nil {
		return nil, err
	}
	return gen.ReleaseReviewItem200JSONResponse{ReviewItemId: req.ReviewItemId, Released: true}, nil
}

// SkipReviewItem gives a claim back and moves the item to the back.
func (s *Server) SkipReviewItem(ctx context.Context, req gen.SkipReviewItemRequestObject) (gen.SkipReviewItemResponseObject, error) {
	if err := s.deps.Review.Release(ctx, AccountFrom(ctx).ID, req.ReviewItemId, req.Body.ClaimToken, true); err != nil {
		return nil, err
	}
	return gen.SkipReviewItem200JSONResponse{ReviewItemId: req.ReviewItemId, Released: true}, nil
}

// RenewReviewClaim extends a claim.
func (s *Server) RenewReviewClaim(ctx context.Context, req gen.RenewReviewClaimRequestObject) (gen.RenewReviewClaimResponseObject, error) {
	it, err := s.deps.Review.Renew(ctx, AccountFrom(ctx).ID, req.ReviewItemId, req.Body.ClaimToken)
	if err != nil {
		return nil, err
	}
	return gen.RenewReviewClaim200JSONResponse(s.claimResponse(ctx, it)), nil
}

// reviewerJob lets a reviewer key read a job only when one of the
// account's review items points to it; to any other job it answers
// NOT_FOUND, as for another account's. Other roles pass.
func (s *Server) reviewerJob(ctx context.Context, jobID string) error {
	c, ok := CallerFrom(ctx)
	if !ok || c.Role != domain.RoleReviewer {
		return nil
	}
	if s.deps.Review != nil {
		ok, err := s.deps.Review.CanReadJob(ctx, AccountFrom(ctx).ID, jobID)
		if err != nil || ok {
			return err
		}
	}
	return domain.Errorf(domain.NotFound, "job %q not found", jobID)
}

// ReviewWebhook renders review_item events: {"type", "reviewItem"} with
// the decided item, without its content (docs/review.md#decision-webhook).
func ReviewWebhook(svc *review.Service) func(ctx context.Context, e *domain.WebhookEvent) ([]byte, error) {
	return func(ctx context.Context, e *domain.WebhookEvent) ([]byte, error) {
		it, err := svc.GetItem(ctx, e.AccountID, e.SubjectID)
		if err != nil {
			return nil, err
		}
		it.Content = nil
		return json.Marshal(struct {
			Type       string         `json:"type"`
			ReviewItem gen.ReviewItem `json:"reviewItem"`
		}{e.Type, toAPIReviewItem(it)})
	}
}
