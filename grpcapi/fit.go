package grpcapi

import (
	"github.com/contenteval/contenteval/domain"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// maxResponseBytes keeps every message the service sends under 4 MiB,
// grpc-go's default receive limit: the Go SDK treats a larger message as
// RESOURCE_EXHAUSTED and would retry, creating its job again. A job of 100
// entries evaluated against a 64 KiB policy carries its rule text in every
// report and passes that; the trims below make room, least useful first.
const maxResponseBytes = 4<<20 - 64<<10

type reportTrim func(*pb.PolicyEvaluationReport)

// dropAssertions removes the rule-by-rule detail (each rule's text); the
// decision, per label and overall, stays.
func dropAssertions(r *pb.PolicyEvaluationReport) {
	for _, s := range r.SectionEvaluationReports {
		s.AssertionEvaluationReports = nil
		if e := s.ExceptionEvaluationReport; e != nil {
			e.AssertionEvaluationReports = nil
		}
	}
	if e := r.ExceptionEvaluationReport; e != nil {
		e.AssertionEvaluationReports = nil
	}
}

func dropContentMetadata(r *pb.PolicyEvaluationReport) { r.ContentMetadata = nil }

// keepDecisiveSections keeps the labels that matched or could not be
// evaluated: what the SDKs report as matches and failures.
func keepDecisiveSections(r *pb.PolicyEvaluationReport) {
	kept := r.SectionEvaluationReports[:0]
	for _, s := range r.SectionEvaluationReports {
		if o := s.GetReviewResult().GetOutcome(); o == pb.Outcome_OUTCOME_TRUE || o == pb.Outcome_OUTCOME_FAILED {
			kept = append(kept, s)
		}
	}
	r.SectionEvaluationReports = kept
}

func dropSections(r *pb.PolicyEvaluationReport) { r.SectionEvaluationReports = nil }

// fitMessage trims the report of one stream message until msg fits. The
// content metadata goes last: it is how SDK users tell the entries of a
// stream apart. With no sections and no metadata a report is a few hundred
// bytes, so the message always fits in the end.
func fitMessage(msg proto.Message, r *pb.PolicyEvaluationReport) {
	for _, trim := range []reportTrim{dropAssertions, keepDecisiveSections, dropSections, dropContentMetadata} {
		if proto.Size(msg) <= maxResponseBytes {
			return
		}
		trim(r)
	}
}

// jobTrims shrink a job, least useful first. A result's content metadata
// repeats the job's content_data metadata, so it goes early.
var jobTrims = []func(*pb.Job){
	eachReport(dropAssertions),
	eachReport(dropContentMetadata),
	eachReport(keepDecisiveSections),
	func(j *pb.Job) {
		for _, c := range j.ContentData {
			c.Metadata = nil
		}
	},
}

func eachReport(trim reportTrim) func(*pb.Job) {
	return func(j *pb.Job) {
		for _, r := range j.Results {
			if r.Report != nil {
				trim(r.Report)
			}
		}
	}
}

// fitJob trims j, the job of resp, until resp fits, and marks it truncated
// when it had to. A job that cannot fit is refused, not sent without its
// results: FAILED_PRECONDITION, which no SDK retries.
func fitJob(resp proto.Message, j *pb.Job) error {
	if proto.Size(resp) <= maxResponseBytes {
		return nil
	}
	j.Truncated = true
	for _, trim := range jobTrims {
		trim(j)
		if proto.Size(resp) <= maxResponseBytes {
			return nil
		}
	}
	return domain.Errorf(domain.FailedPrecondition,
		"job %s is too large for one gRPC message (4 MiB) even without its rule-by-rule reports; GET /v1/jobs/%s returns it whole", j.JobUuid, j.JobUuid)
}

// listedJobBudget leaves room beside one job for the rest of a listing (its
// next page token), so a page of one job always fits.
const listedJobBudget = maxResponseBytes - 4<<10

// fitListedJob trims a job of a listing until it fits a message alone; as a
// last resort it goes without its results (GetJob or REST has them), so one
// large job never blocks the pages after it.
func fitListedJob(j *pb.Job) {
	if sizeInList(j) <= listedJobBudget {
		return
	}
	j.Truncated = true
	for _, trim := range jobTrims {
		trim(j)
		if sizeInList(j) <= listedJobBudget {
			return
		}
	}
	j.Results = nil
}

// sizeInList is what j adds to a ListJobsResponse (field 1, length-delimited).
func sizeInList(j *pb.Job) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(proto.Size(j))
}
