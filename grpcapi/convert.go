package grpcapi

import (
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// toDomainContent maps the entries as REST's toDomainContent does: the
// oneof says which content field is set; content_hash, labels,
// content_type and title are the server's to fill and are ignored.
func toDomainContent(in []*pb.ContentData) []domain.ContentInput {
	out := make([]domain.ContentInput, len(in))
	for i, c := range in {
		ci := domain.ContentInput{Metadata: c.GetMetadata(), Captions: c.Captions}
		switch v := c.GetContent().(type) {
		case *pb.ContentData_Text:
			ci.Text = &v.Text
		case *pb.ContentData_Image:
			ci.Image = nonNilBytes(v.Image)
		case *pb.ContentData_ImageUrl:
			ci.ImageURL = &v.ImageUrl
		case *pb.ContentData_VideoUrl:
			ci.VideoURL = &v.VideoUrl
		case *pb.ContentData_AudioUrl:
			ci.AudioURL = &v.AudioUrl
		case *pb.ContentData_Video:
			ci.Video = nonNilBytes(v.Video)
		case *pb.ContentData_Audio:
			ci.Audio = nonNilBytes(v.Audio)
		}
		out[i] = ci
	}
	return out
}

// nonNilBytes keeps an empty bytes field set (the domain refuses it as
// empty) rather than absent (which it would call missing).
func nonNilBytes(b []byte) *[]byte {
	if b == nil {
		b = []byte{}
	}
	return &b
}

// toDomainFilter maps the list query. The Go SDK always sends the three
// time ranges with both bounds at the zero time 0001-01-01T00:00:00Z; a
// zero bound is open, or every listing would be empty.
func toDomainFilter(q *pb.ListJobsRequest_Query) (domain.JobFilter, error) {
	var f domain.JobFilter
	if q == nil {
		return f, nil
	}
	f.PolicyID = q.GetPolicyId()
	f.Status = toDomainJobStatus(q.GetStatus())
	for _, r := range []struct {
		field string
		in    *pb.TimeRange
		out   *domain.TimeRange
	}{
		{"query.created_time_range", q.GetCreatedTimeRange(), &f.Created},
		{"query.updated_time_range", q.GetUpdatedTimeRange(), &f.Updated},
		{"query.completed_time_range", q.GetCompletedTimeRange(), &f.Completed},
	} {
		var err error
		if r.out.Start, err = timeBound(r.field+".start", r.in.GetStart()); err != nil {
			return f, err
		}
		if r.out.End, err = timeBound(r.field+".end", r.in.GetEnd()); err != nil {
			return f, err
		}
		r.out.Inclusive = r.in.GetInclusive()
	}
	return f, nil
}

func timeBound(field string, ts *timestamppb.Timestamp) (*time.Time, error) {
	if ts == nil {
		return nil, nil
	}
	if err := ts.CheckValid(); err != nil {
		return nil, domain.InvalidField(field, "is not a valid timestamp (0001-01-01 to 9999-12-31, nanos below one second)")
	}
	t := ts.AsTime()
	if t.IsZero() {
		return nil, nil
	}
	return &t, nil
}

// toDomainJobStatus maps a status filter; UNSPECIFIED (and values we do not
// know) filter nothing, as in REST.
func toDomainJobStatus(s pb.JobStatus) domain.JobStatus {
	switch s {
	case pb.JobStatus_JOB_STATUS_PENDING:
		return domain.JobPending
	case pb.JobStatus_JOB_STATUS_RUNNING:
		return domain.JobRunning
	case pb.JobStatus_JOB_STATUS_COMPLETED:
		return domain.JobCompleted
	case pb.JobStatus_JOB_STATUS_FAILED:
		return domain.JobFailed
	case pb.JobStatus_JOB_STATUS_CANCELED:
		return domain.JobCanceled
	}
	return ""
}

func toPBJobStatus(s domain.JobStatus) pb.JobStatus {
	return pb.JobStatus(pb.JobStatus_value["JOB_STATUS_"+strings.ToUpper(string(s))])
}

func toPBJobError(e *domain.JobError) *pb.JobError {
	if e == nil {
		return nil
	}
	return &pb.JobError{Reason: string(e.Reason), Message: e.Message}
}

func timestamp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

// toPBJob maps a job as REST's toAPIJob does: results for completed jobs
// only (an unfinished job carries basic information: docs/api.md#jobs).
func toPBJob(j *domain.Job) *pb.Job {
	out := &pb.Job{
		JobUuid: j.ID, CustomerId: j.AccountID, Status: toPBJobStatus(j.Status),
		Metadata: &pb.Job_Metadata{CustomerId: j.AccountID, Threshold: j.Threshold},
		Created:  timestamppb.New(j.Created), Updated: timestamppb.New(j.Updated), Completed: timestamp(j.Completed),
		Threshold: j.Threshold, Error: toPBJobError(j.Error), Expedited: j.Expedited, JobType: string(j.Type),
	}
	if j.PolicyID != "" {
		out.PolicyId, out.PolicyVersionId = &j.PolicyID, &j.PolicyVersionID
	}
	if j.LabelID != "" {
		out.LabelId, out.LabelVersionId = &j.LabelID, &j.LabelVersionID
	}
	out.ContentData = make([]*pb.ContentData, len(j.Contents))
	for i, c := range j.Contents {
		out.ContentData[i] = &pb.ContentData{ContentHash: c.ContentHash, Metadata: c.Metadata}
	}
	if j.Status == domain.JobCompleted && j.Results != nil {
		out.Results = make([]*pb.JobResult, len(j.Results))
		for i, r := range j.Results {
			out.Results[i] = &pb.JobResult{
				Uuid: r.ID, JobUuid: j.ID, ContentHash: r.ContentHash, Created: timestamppb.New(r.Created),
				Report: toPBReport(j, r), Error: toPBJobError(r.Error),
			}
		}
	}
	return out
}

func toPBOutcome(o rules.Outcome) pb.Outcome {
	return pb.Outcome(pb.Outcome_value[string(o)])
}

// toPBReport maps one result's report. Every report, section and exception
// carries a review_result: the Go SDK reads them without nil checks, so an
// entry that has no report (it failed) gets one that says FAILED.
func toPBReport(j *domain.Job, r *domain.JobResult) *pb.PolicyEvaluationReport {
	out := &pb.PolicyEvaluationReport{
		PolicyId: j.PolicyID, PolicyKey: j.PolicyKey, PolicyVersionId: j.PolicyVersionID, Name: j.PolicyKey,
		ContentHash: r.ContentHash, ContentMetadata: r.Metadata, Threshold: j.Threshold,
	}
	rep := r.Report
	if rep == nil {
		out.Result = pb.Outcome_OUTCOME_FAILED
		out.ReviewResult = &pb.PolicyEvaluationReport_ReviewResult{Outcome: pb.Outcome_OUTCOME_FAILED, Score: -1}
		return out
	}
	out.Result, out.Threshold = toPBOutcome(rep.Result), rep.Threshold
	out.SectionEvaluationReports = make([]*pb.PolicyEvaluationReport_SectionEvaluationReport, len(rep.Sections))
	score := 0.0
	for i, sec := range rep.Sections {
		review := toPBReview(sec.Review, sec.Result, sec.Score)
		if i == 0 || review.Score > score {
			score = review.Score
		}
		out.SectionEvaluationReports[i] = &pb.PolicyEvaluationReport_SectionEvaluationReport{
			Name: sec.Name, Message: sec.Message, Result: toPBOutcome(sec.Result),
			AssertionEvaluationReports: toPBAssertions(sec.Assertions),
			ExceptionEvaluationReport:  toPBException(sec.Exception),
			ReviewResult:               review,
		}
	}
	out.ReviewResult = &pb.PolicyEvaluationReport_ReviewResult{Outcome: out.Result, Score: score}
	out.ExceptionEvaluationReport = toPBException(rep.Exception)
	if len(rep.LabelMatches) > 0 {
		out.LabelMatches = make(map[string]float64, len(rep.LabelMatches))
		for k, v := range rep.LabelMatches {
			out.LabelMatches[k] = v
		}
	}
	out.TokenUsage = &pb.TokenUsage{
		InputTokens: rep.TokenUsage.InputTokens, BilledTokens: rep.TokenUsage.BilledTokens, Multiplier: rep.TokenUsage.Multiplier,
	}
	return out
}

// toPBReview is the engine's review result, or the section's own outcome
// and score where the engine left it unset.
func toPBReview(r rules.ReviewResult, result rules.Outcome, score float64) *pb.PolicyEvaluationReport_ReviewResult {
	if r.Outcome == "" {
		return &pb.PolicyEvaluationReport_ReviewResult{Outcome: toPBOutcome(result), Score: score}
	}
	return &pb.PolicyEvaluationReport_ReviewResult{Outcome: toPBOutcome(r.Outcome), Score: r.Score}
}

func toPBAssertions(as []rules.AssertionReport) []*pb.PolicyEvaluationReport_AssertionEvaluationReport {
	if len(as) == 0 {
		return nil
	}
	out := make([]*pb.PolicyEvaluationReport_AssertionEvaluationReport, len(as))
	for i, a := range as {
		out[i] = &pb.PolicyEvaluationReport_AssertionEvaluationReport{Result: toPBOutcome(a.Result), Message: a.Message, Score: a.Score}
	}
	return out
}

func toPBException(e *rules.ExceptionReport) *pb.PolicyEvaluationReport_ExceptionEvaluationReport {
	if e == nil {
		return nil
	}
	return &pb.PolicyEvaluationReport_ExceptionEvaluationReport{
		Result: toPBOutcome(e.Result), AssertionEvaluationReports: toPBAssertions(e.Assertions),
		ReviewResult: toPBReview(e.Review, e.Result, 0),
	}
}
