package grpcapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// bigJob is a completed job of n results whose reports have sections
// sections of which the first is TRUE, each with one assertion of
// assertionBytes of rule text, and metaBytes of metadata per entry.
func bigJob(n, sections, assertionBytes, metaBytes int) *pb.Job {
	j := &pb.Job{JobUuid: "job", Status: pb.JobStatus_JOB_STATUS_COMPLETED}
	meta := map[string]string{"m": strings.Repeat("m", metaBytes)}
	for i := range n {
		rep := &pb.PolicyEvaluationReport{ContentMetadata: meta,
			ReviewResult: &pb.PolicyEvaluationReport_ReviewResult{Outcome: pb.Outcome_OUTCOME_TRUE, Score: 1}}
		for s := range sections {
			outcome := pb.Outcome_OUTCOME_FALSE
			if s == 0 {
				outcome = pb.Outcome_OUTCOME_TRUE
			}
			rep.SectionEvaluationReports = append(rep.SectionEvaluationReports, &pb.PolicyEvaluationReport_SectionEvaluationReport{
				Name: fmt.Sprintf("label %d", s), Result: outcome,
				ReviewResult: &pb.PolicyEvaluationReport_ReviewResult{Outcome: outcome, Score: 1},
				AssertionEvaluationReports: []*pb.PolicyEvaluationReport_AssertionEvaluationReport{
					{Result: outcome, Message: strings.Repeat("r", assertionBytes)},
				},
			})
		}
		j.Results = append(j.Results, &pb.JobResult{Uuid: fmt.Sprint(i), Report: rep})
		j.ContentData = append(j.ContentData, &pb.ContentData{ContentHash: "h", Metadata: meta})
	}
	return j
}

func TestFitJob(t *testing.T) {
	for _, tc := range []struct {
		name      string
		job       *pb.Job
		truncated bool
		// what is left: assertion reports, report metadata, sections per
		// report, job content metadata
		assertions, reportMeta bool
		sections               int
		contentMeta            bool
	}{
		{"small: untouched", bigJob(3, 20, 100, 10), false, true, true, 20, true},
		// 100 entries against a policy of 64 KiB of rule text.
		{"rule text", bigJob(100, 20, 3<<10, 10), true, false, true, 20, true},
		{"metadata repeated in reports", bigJob(100, 2, 10, 25<<10), true, false, false, 2, true},
		{"many labels", bigJob(100, 4000, 1, 1), true, false, false, 1, true},
		{"metadata alone", bigJob(100, 1, 1, 60<<10), true, false, false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := &pb.GetJobResponse{Job: tc.job}
			require.NoError(t, fitJob(resp, tc.job))
			require.LessOrEqual(t, proto.Size(resp), maxResponseBytes)
			require.Equal(t, tc.truncated, tc.job.Truncated)
			for _, r := range tc.job.Results {
				require.Len(t, r.Report.SectionEvaluationReports, tc.sections)
				require.Equal(t, tc.assertions, len(r.Report.SectionEvaluationReports[0].AssertionEvaluationReports) > 0)
				require.Equal(t, tc.reportMeta, r.Report.ContentMetadata != nil)
				require.Equal(t, pb.Outcome_OUTCOME_TRUE, r.Report.SectionEvaluationReports[0].ReviewResult.Outcome, "the matched label stays")
				require.NotNil(t, r.Report.ReviewResult)
			}
			require.Equal(t, tc.contentMeta, tc.job.ContentData[0].Metadata != nil)
		})
	}

	// A job that cannot fit is refused with a code no SDK retries, and its
	// listing leaves the results out instead.
	huge := bigJob(100, 1, 1, 1)
	for _, r := range huge.Results {
		r.Report.SectionEvaluationReports[0].Name = strings.Repeat("n", 60<<10)
	}
	err := fitJob(&pb.GetJobResponse{Job: huge}, huge)
	require.Equal(t, domain.FailedPrecondition, domain.ErrorCode(err))
	require.Contains(t, err.Error(), "GET /v1/jobs/job")
	fitListedJob(huge)
	require.Nil(t, huge.Results)
	require.True(t, huge.Truncated)
	require.LessOrEqual(t, sizeInList(huge), maxResponseBytes)
}

func TestFitMessage(t *testing.T) {
	for _, rep := range []*pb.PolicyEvaluationReport{
		bigJob(1, 20, 300<<10, 10).Results[0].Report,
		bigJob(1, 5000, 1000, 10).Results[0].Report,
		bigJob(1, 2, 10, 5<<20).Results[0].Report,
	} {
		msg := &pb.EvaluateResponse{PolicyEvaluationReport: rep}
		fitMessage(msg, rep)
		require.LessOrEqual(t, proto.Size(msg), maxResponseBytes)
		require.NotNil(t, rep.ReviewResult)
	}
	small := bigJob(1, 3, 10, 10).Results[0].Report
	fitMessage(&pb.EvaluateResponse{PolicyEvaluationReport: small}, small)
	require.Len(t, small.SectionEvaluationReports, 3)
	require.NotEmpty(t, small.SectionEvaluationReports[1].AssertionEvaluationReports)
	require.NotNil(t, small.ContentMetadata)
}
