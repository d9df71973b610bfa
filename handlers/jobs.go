package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/gen"
)

// CreateJob submits a job: queued (pending) by default, run at once and
// waited for (up to the wait cap) with waitForCompletion.
func (s *Server) CreateJob(ctx context.Context, req gen.CreateJobRequestObject) (gen.CreateJobResponseObject, error) {
	b := req.Body
	r := jobs.Request{
		PolicyID: b.PolicyId, Content: toDomainContent(b.ContentData), Threshold: deref(b.Threshold),
		Expedited: deref(b.Expedited), Options: toDomainOptions(b.Options), Wait: deref(b.WaitForCompletion),
	}
	if b.Webhook != nil {
		r.Webhook = &domain.Webhook{URL: b.Webhook.Url, ExtraHeaders: deref(b.Webhook.ExtraHeaders)}
	}
	j, err := s.deps.Jobs.Submit(ctx, AccountFrom(ctx), r)
	if err != nil {
		return nil, err
	}
	resp := jobResponse{job: j}
	if j.ResultsStored {
		resp.each = func(fn func(*domain.JobResult) error) error { return s.deps.Jobs.EachResult(ctx, j.ID, fn) }
	}
	return resp, nil
}

// GetJob returns one job of the account, with results when complete.
func (s *Server) GetJob(ctx context.Context, req gen.GetJobRequestObject) (gen.GetJobResponseObject, error) {
	if err := s.reviewerJob(ctx, req.JobUuid); err != nil {
		return nil, err
	}
	j, err := s.deps.Jobs.Get(ctx, AccountFrom(ctx), req.JobUuid)
	if err != nil {
		return nil, err
	}
	return jobResponse{job: j}, nil
}

// ListJobs returns a page of the account's jobs, newest first.
func (s *Server) ListJobs(ctx context.Context, req gen.ListJobsRequestObject) (gen.ListJobsResponseObject, error) {
	p := req.Params
	f := domain.JobFilter{
		PolicyID:  deref(p.QueryPolicyId),
		Created:   domain.TimeRange{Start: p.QueryCreatedTimeRangeStart, End: p.QueryCreatedTimeRangeEnd, Inclusive: deref(p.QueryCreatedTimeRangeInclusive)},
		Updated:   domain.TimeRange{Start: p.QueryUpdatedTimeRangeStart, End: p.QueryUpdatedTimeRangeEnd, Inclusive: deref(p.QueryUpdatedTimeRangeInclusive)},
		Completed: domain.TimeRange{Start: p.QueryCompletedTimeRangeStart, End: p.QueryCompletedTimeRangeEnd, Inclusive: deref(p.QueryCompletedTimeRangeInclusive)},
	}
	if p.QueryStatus != nil {
		f.Status = toDomainJobStatus(*p.QueryStatus)
	}
	view := jobs.ViewFull
	if deref(p.View) == gen.JOBVIEWBASIC {
		view = jobs.ViewBasic
	}
	js, next, err := s.deps.Jobs.List(ctx, AccountFrom(ctx), f, view, p.PageSize, deref(p.PageToken))
	if err != nil {
		return nil, err
	}
	out := make([]gen.Job, len(js))
	for i, j := range js {
		out[i] = toAPIJob(j)
	}
	return gen.ListJobs200JSONResponse{Jobs: out, NextPageToken: nonEmpty(next)}, nil
}

// StreamJobs validates the request and records its job; the entries are
// evaluated while the response is written (streamJobsResponse).
func (s *Server) StreamJobs(ctx context.Context, req gen.StreamJobsRequestObject) (gen.StreamJobsResponseObject, error) {
	b := req.Body
	st, err := s.deps.Jobs.StartStream(ctx, AccountFrom(ctx), jobs.Request{
		PolicyID: b.PolicyId, Content: toDomainContent(b.ContentData), Threshold: deref(b.Threshold),
		Expedited: deref(b.Expedited), Options: toDomainOptions(b.Options),
	})
	if err != nil {
		return nil, err
	}
	window := s.cfg.StreamWriteTimeout
	if window <= 0 {
		window = defaultStreamWriteWindow
	}
	return streamJobsResponse{ctx: ctx, stream: st, log: s.log, writeWindow: window}, nil
}

// defaultStreamWriteWindow is how long writing one stream line may take
// unless configured; each line pushes the connection's write deadline this
// far out, so a long stream is not cut by the server's WriteTimeout while a
// stalled client still is.
const defaultStreamWriteWindow = 2 * time.Minute

// streamJobsResponse writes the NDJSON stream of POST /v1/jobs/stream: one
// line per entry, flushed as soon as the entry is evaluated. The request
// context ends when the client goes away, which cancels the remaining
// entries (the job is recorded canceled).
type streamJobsResponse struct {
	ctx    context.Context
	stream *jobs.Stream
	log    interface {
		Debug(msg string, args ...any)
	}
	writeWindow time.Duration
}

// streamLine is one line: exactly one of result and error.
type streamLine struct {
	Result *gen.StreamResult `json:"result,omitempty"`
	Error  *statusBody       `json:"error,omitempty"`
}

func (r streamJobsResponse) VisitStreamJobsResponse(w http.ResponseWriter) error {
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(r.writeWindow))
	_ = rc.Flush()
	enc := json.NewEncoder(w)
	j := r.stream.Job
	err := r.stream.Run(r.ctx, func(it jobs.StreamItem) error {
		var line streamLine
		if it.Err != nil {
			sb := errorBody(it.Err).(statusBody)
			line.Error = &sb
		} else {
			res := it.Result
			line.Result = &gen.StreamResult{
				JobUuid: j.ID, JobResultId: res.ID, ContentHash: res.ContentHash,
				PolicyEvaluationReport: toAPIReport(j, res),
			}
		}
		_ = rc.SetWriteDeadline(time.Now().Add(r.writeWindow))
		if err := enc.Encode(line); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil {
		// The status line is sent; all that is left is to stop.
		r.log.Debug("stream ended early", "job", j.ID, "error", err.Error())
	}
	return nil
}

func toDomainContent(in []gen.ContentData) []domain.ContentInput {
	out := make([]domain.ContentInput, len(in))
	for i, c := range in {
		out[i] = domain.ContentInput{
			Text: c.Text, ImageURL: c.ImageUrl, VideoURL: c.VideoUrl, AudioURL: c.AudioUrl, Captions: c.Captions,
			Image: c.Image, Video: c.Video, Audio: c.Audio, Metadata: deref(c.Metadata),
		}
	}
	return out
}

func toDomainOptions(o *gen.EvaluationOptions) map[string]string {
	if o == nil || o.Options == nil {
		return nil
	}
	return *o.Options
}

// toDomainJobStatus maps JOB_STATUS_X to the domain status; UNSPECIFIED
// (and values we do not know) filter nothing.
func toDomainJobStatus(s gen.JobStatus) domain.JobStatus {
	switch st := domain.JobStatus(strings.ToLower(strings.TrimPrefix(string(s), "JOB_STATUS_"))); st {
	case domain.JobPending, domain.JobRunning, domain.JobCompleted, domain.JobFailed, domain.JobCanceled:
		return st
	}
	return ""
}

func toAPIJobStatus(s domain.JobStatus) gen.JobStatus {
	return gen.JobStatus("JOB_STATUS_" + strings.ToUpper(string(s)))
}

func toAPIJobError(e *domain.JobError) *gen.JobError {
	if e == nil {
		return nil
	}
	return &gen.JobError{Reason: gen.JobErrorReason(e.Reason), Message: e.Message}
}

func toAPIJob(j *domain.Job) gen.Job {
	out := toAPIJobHead(j)
	// Results only for complete jobs (docs/api.md#jobs: an unfinished job carries
	// basic information only).
	if j.Status == domain.JobCompleted && j.Results != nil {
		rs := make([]gen.JobResult, len(j.Results))
		for i, r := range j.Results {
			rs[i] = toAPIJobResult(j, r)
		}
		out.Results = &rs
	}
	return out
}

// toAPIJobHead is toAPIJob without the results.
func toAPIJobHead(j *domain.Job) gen.Job {
	out := gen.Job{
		JobUuid: j.ID, CustomerId: j.AccountID, Status: toAPIJobStatus(j.Status),
		Created: j.Created, Updated: j.Updated, Completed: j.Completed,
		Threshold: j.Threshold, JobType: gen.JobType(j.Type), Expedited: j.Expedited, Error: toAPIJobError(j.Error),
	}
	if j.PolicyID != "" {
		out.PolicyId, out.PolicyVersionId = &j.PolicyID, &j.PolicyVersionID
	}
	if j.LabelID != "" {
		out.LabelId, out.LabelVersionId = &j.LabelID, &j.LabelVersionID
	}
	cs := make([]gen.ContentSummary, len(j.Contents))
	for i, c := range j.Contents {
		cs[i] = gen.ContentSummary{Metadata: stringMap(c.Metadata)}
		if c.ContentHash != "" {
			cs[i].ContentHash = &j.Contents[i].ContentHash
		}
	}
	out.ContentData = cs
	return out
}

func toAPIJobResult(j *domain.Job, r *domain.JobResult) gen.JobResult {
	out := gen.JobResult{
		JobUuid: j.ID, JobResultId: r.ID, Created: r.Created,
		Report: toAPIReport(j, r), Error: toAPIJobError(r.Error),
	}
	if r.ContentHash != "" {
		out.ContentHash = &r.ContentHash
	}
	return out
}

func stringMap(m map[string]string) *gen.StringMap {
	if m == nil {
		return nil
	}
	sm := gen.StringMap(m)
	return &sm
}

func toAPIReport(j *domain.Job, r *domain.JobResult) *gen.EvaluationReport {
	rep := r.Report
	if rep == nil {
		return nil
	}
	matches := map[string]float64{}
	for k, v := range rep.LabelMatches {
		matches[k] = v
	}
	sections := make([]gen.SectionReport, len(rep.Sections))
	for i, sec := range rep.Sections {
		sections[i] = gen.SectionReport{
			Name: sec.Name, Message: sec.Message, Result: gen.Outcome(sec.Result),
			AssertionEvaluationReports: toAPIAssertions(sec.Assertions),
			ExceptionEvaluationReport:  toAPIException(sec.Exception),
			ReviewResult:               toAPIReview(sec.Review),
		}
	}
	out := &gen.EvaluationReport{
		PolicyId: j.PolicyID, PolicyKey: j.PolicyKey, PolicyVersionId: j.PolicyVersionID,
		Result: gen.Outcome(rep.Result), SectionEvaluationReports: sections,
		ExceptionEvaluationReport: toAPIException(rep.Exception),
		ContentMetadata:           stringMap(r.Metadata),
		Threshold:                 rep.Threshold, LabelMatches: matches,
		TokenUsage: gen.TokenUsage{
			InputTokens: float32(rep.TokenUsage.InputTokens), BilledTokens: float32(rep.TokenUsage.BilledTokens),
			Multiplier: rep.TokenUsage.Multiplier,
		},
	}
	if r.ContentHash != "" {
		out.ContentHash = ptr(r.ContentHash)
	}
	if msg := truncationMessage(rep); msg != "" {
		out.Truncation = &gen.ReportTruncation{Message: msg}
	}
	if j.LabelID != "" {
		out.LabelId, out.LabelVersionId = ptr(j.LabelID), ptr(j.LabelVersionID)
	}
	if len(rep.Precheck) > 0 {
		out.PrecheckMatches = ptr(toAPIPrecheckMatches(rep.Precheck))
	}
	return out
}

func toAPIPrecheckMatches(ms []rules.PrecheckMatch) []gen.PrecheckMatch {
	out := make([]gen.PrecheckMatch, len(ms))
	for i, m := range ms {
		out[i] = gen.PrecheckMatch{ListId: m.ListID, ListName: m.ListName, Kind: gen.HashListKind(m.Kind), MatchedHash: m.Hash,
			Distance: int32(m.Distance), MatchConfidence: gen.PrecheckMatchConfidence(m.Confidence),
			Source: nonEmpty(m.Source), Note: nonEmpty(m.Note)}
		if m.Frame != nil {
			out[i].FrameStartMs = ptr(strconv.FormatInt(m.Frame.StartMs, 10))
			out[i].FrameEndMs = ptr(strconv.FormatInt(m.Frame.EndMs, 10))
		}
	}
	return out
}

// truncationMessage says what rep left out ("" when nothing).
func truncationMessage(rep *rules.Report) string {
	switch {
	case rep.SpansTruncated && rep.HitsTruncated:
		return rules.SpansTruncatedMessage + "; " + domain.TimedHitsTruncatedMessage
	case rep.SpansTruncated:
		return rules.SpansTruncatedMessage
	case rep.HitsTruncated:
		return domain.TimedHitsTruncatedMessage
	}
	return ""
}

func toAPIAssertions(as []rules.AssertionReport) []gen.AssertionReport {
	out := make([]gen.AssertionReport, len(as))
	for i, a := range as {
		out[i] = gen.AssertionReport{Result: gen.Outcome(a.Result), Message: a.Message, Score: a.Score, Spans: toAPISpans(a.FlaggedSpans())}
	}
	return out
}

func toAPIException(e *rules.ExceptionReport) *gen.ExceptionReport {
	if e == nil {
		return nil
	}
	return &gen.ExceptionReport{Result: gen.Outcome(e.Result), AssertionEvaluationReports: toAPIAssertions(e.Assertions), ReviewResult: toAPIReview(e.Review)}
}

func toAPIReview(r rules.ReviewResult) *gen.ReviewResult {
	if r.Outcome == "" {
		return nil
	}
	return &gen.ReviewResult{Outcome: gen.Outcome(r.Outcome), Score: r.Score}
}
