package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// TestGRPCCreateAndGetJob drives CreateJob (queued and waited for) and
// GetJob, and checks the job is the one REST shows.
func TestGRPCCreateAndGetJob(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		ctx := bearer(context.Background(), tok)
		policyID := env.createPolicy(tok, "p")
		gw := env.gateway()

		// Queued: PENDING at once, then completed by a worker.
		var trailer metadata.MD
		created, err := gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: policyID,
			ContentData: []*pb.ContentData{textData("i will kill you", map[string]string{"ref": "a"}), textData("hello", nil)},
		}, grpc.Trailer(&trailer))
		require.NoError(t, err)
		require.Len(t, trailer.Get("x-request-id"), 1, "the request id comes back as REST's X-Request-Id does")
		j := created.Job
		require.Equal(t, pb.JobStatus_JOB_STATUS_PENDING, j.Status)
		require.Equal(t, env.PolicyFirst.ID, j.CustomerId)
		require.Equal(t, env.PolicyFirst.ID, j.Metadata.CustomerId)
		require.Equal(t, 0.5, j.Threshold, "unset threshold is 0.5")
		require.Equal(t, policyID, j.GetPolicyId())
		require.Empty(t, j.Results)
		require.Len(t, j.ContentData, 2)
		require.Equal(t, sha("i will kill you"), j.ContentData[0].ContentHash)
		require.Equal(t, map[string]string{"ref": "a"}, j.ContentData[0].Metadata)

		done := waitForGRPCJob(t, gw, tok, j.JobUuid)
		require.Equal(t, pb.JobStatus_JOB_STATUS_COMPLETED, done.Status)
		require.NotNil(t, done.Completed)
		require.Len(t, done.Results, 2)
		r0, r1 := done.Results[0], done.Results[1]
		require.Equal(t, j.JobUuid, r0.JobUuid)
		require.Equal(t, sha("i will kill you"), r0.ContentHash)
		require.Equal(t, pb.Outcome_OUTCOME_TRUE, r0.Report.ReviewResult.Outcome)
		require.Equal(t, pb.Outcome_OUTCOME_TRUE, r0.Report.Result)
		require.Equal(t, pb.Outcome_OUTCOME_TRUE, section(t, r0.Report, "Threat").ReviewResult.Outcome)
		require.Equal(t, pb.Outcome_OUTCOME_FALSE, section(t, r0.Report, "Spam").ReviewResult.Outcome)
		require.NotEmpty(t, section(t, r0.Report, "Threat").AssertionEvaluationReports)
		require.Equal(t, map[string]string{"ref": "a"}, r0.Report.ContentMetadata)
		require.Equal(t, map[string]float64{"Threat": 1}, r0.Report.LabelMatches)
		require.Equal(t, pb.Outcome_OUTCOME_FALSE, r1.Report.ReviewResult.Outcome)
		require.NotNil(t, r1.Report.ReviewResult, "every report carries a review result")

		// The same job over REST: same ids and outcomes.
		rest, err := env.Client(tok).GetJobWithResponse(context.Background(), j.JobUuid)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, rest.StatusCode())
		require.Equal(t, (*rest.JSON200.Job.Results)[0].JobResultId, r0.Uuid)
		require.Equal(t, done.Created.AsTime(), rest.JSON200.Job.Created.UTC())

		// Waited for, with a threshold, expedited and options.
		created, err = gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: policyID, WaitForCompletion: true,
			Threshold: proto.Float64(0.9), Expedited: proto.Bool(true), Options: map[string]string{"ocr": "false"},
			ContentData: []*pb.ContentData{textData("buy now", nil)},
		})
		require.NoError(t, err)
		j = created.Job
		require.Equal(t, pb.JobStatus_JOB_STATUS_COMPLETED, j.Status)
		require.Equal(t, 0.9, j.Threshold)
		require.True(t, j.Expedited)
		require.Equal(t, pb.Outcome_OUTCOME_TRUE, section(t, j.Results[0].Report, "Spam").ReviewResult.Outcome)
		got, err := gw.GetJob(ctx, &pb.GetJobRequest{JobUuid: j.JobUuid})
		require.NoError(t, err)
		require.True(t, proto.Equal(j.Results[0].Report, got.Job.Results[0].Report), "GetJob returns what CreateJob did")

		// A label-first account reads jobs but may not create them (REST's
		// x-account-type).
		_, err = gw.GetJob(bearer(context.Background(), env.LabelFirst.Token), &pb.GetJobRequest{JobUuid: j.JobUuid})
		requireCode(t, err, codes.NotFound)
	})
}

// TestGRPCListJobs covers the status filter, paging, time ranges and the
// zero ranges the Go SDK always sends.
func TestGRPCListJobs(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		ctx := bearer(context.Background(), tok)
		policyID := env.createPolicy(tok, "p")
		other := env.createPolicy(tok, "other")
		gw := env.gateway()
		var ids []string
		for i, p := range []string{policyID, policyID, other} {
			env.Clock.Add(time.Second) // distinct creation times, newest first
			r, err := gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: p, WaitForCompletion: i < 2,
				ContentData: []*pb.ContentData{textData("hello", nil)}})
			require.NoError(t, err)
			ids = append(ids, r.Job.JobUuid)
		}
		waitForGRPCJob(t, gw, tok, ids[2])

		list := func(req *pb.ListJobsRequest) ([]string, string) {
			t.Helper()
			r, err := gw.ListJobs(ctx, req)
			require.NoError(t, err)
			var got []string
			for _, j := range r.Jobs {
				got = append(got, j.JobUuid)
				for _, r := range j.Results { // whatever REST's listing carries
					require.NotNil(t, r.Report.ReviewResult)
				}
			}
			return got, r.NextPageToken
		}
		all, next := list(&pb.ListJobsRequest{})
		require.Equal(t, []string{ids[2], ids[1], ids[0]}, all)
		require.Empty(t, next)

		// The Go SDK sends every range with both bounds at the zero time.
		zero := &pb.TimeRange{Start: timestamppb.New(time.Time{}), End: timestamppb.New(time.Time{})}
		got, _ := list(&pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{CreatedTimeRange: zero, UpdatedTimeRange: zero, CompletedTimeRange: zero}})
		require.Equal(t, all, got)

		// Paging: one at a time, in order, to the end.
		var paged []string
		token := ""
		for {
			page, next := list(&pb.ListJobsRequest{PageSize: 1, PageToken: token})
			require.Len(t, page, 1)
			paged = append(paged, page...)
			if next == "" {
				break
			}
			token = next
		}
		require.Equal(t, all, paged)

		// Filters: policy, status, and a created range that ends before the
		// newest job.
		got, _ = list(&pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{PolicyId: &other}})
		require.Equal(t, []string{ids[2]}, got)
		got, _ = list(&pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{Status: pb.JobStatus_JOB_STATUS_PENDING}})
		require.Empty(t, got, "the queued job has run")
		got, _ = list(&pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{Status: pb.JobStatus_JOB_STATUS_COMPLETED}})
		require.Equal(t, all, got)
		newest, err := gw.GetJob(ctx, &pb.GetJobRequest{JobUuid: ids[2]})
		require.NoError(t, err)
		got, _ = list(&pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{CreatedTimeRange: &pb.TimeRange{End: newest.Job.Created}}})
		require.Equal(t, []string{ids[1], ids[0]}, got, "exclusive end")
		got, _ = list(&pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{CreatedTimeRange: &pb.TimeRange{Start: newest.Job.Created, Inclusive: true}}})
		require.Equal(t, []string{ids[2]}, got, "inclusive start")

		// Another account sees none of them; a label-first account may list.
		r, err := gw.ListJobs(bearer(context.Background(), env.LabelFirst.Token), &pb.ListJobsRequest{})
		require.NoError(t, err)
		require.Empty(t, r.Jobs)
	})
}

// TestGRPCEvaluate streams results in request order, as REST's stream.
func TestGRPCEvaluate(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		ctx := bearer(context.Background(), tok)
		policyID := env.createPolicy(tok, "p")
		gw := env.gateway()
		texts := []string{"hello", "i will kill you", "buy now", "good day"}
		var data []*pb.ContentData
		for i, s := range texts {
			data = append(data, textData(s, map[string]string{"i": string(rune('0' + i))}))
		}
		stream, err := gw.Evaluate(ctx, &pb.EvaluateRequest{PolicyId: policyID, ContentData: data})
		require.NoError(t, err)
		var got []*pb.EvaluateResponse
		for {
			m, err := stream.Recv()
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			got = append(got, m)
		}
		require.Len(t, got, len(texts))
		for i, m := range got {
			require.Equal(t, sha(texts[i]), m.ContentHash, "in request order")
			require.Equal(t, got[0].JobUuid, m.JobUuid)
			require.NotEmpty(t, m.JobResultId)
			require.Equal(t, map[string]string{"i": string(rune('0' + i))}, m.PolicyEvaluationReport.ContentMetadata)
			require.Equal(t, policyID, m.PolicyEvaluationReport.PolicyId)
		}
		require.Equal(t, pb.Outcome_OUTCOME_FALSE, got[0].PolicyEvaluationReport.ReviewResult.Outcome)
		require.Equal(t, pb.Outcome_OUTCOME_TRUE, section(t, got[1].PolicyEvaluationReport, "Threat").ReviewResult.Outcome)
		require.Equal(t, pb.Outcome_OUTCOME_TRUE, section(t, got[2].PolicyEvaluationReport, "Spam").ReviewResult.Outcome)

		// The stream's job is recorded like any other.
		j := waitForGRPCJob(t, gw, tok, got[0].JobUuid)
		require.Equal(t, pb.JobStatus_JOB_STATUS_COMPLETED, j.Status)
		require.Len(t, j.Results, len(texts))
		require.Equal(t, got[3].JobResultId, j.Results[3].Uuid)

		// include_evaluation_report=false leaves the reports out.
		stream, err = gw.Evaluate(ctx, &pb.EvaluateRequest{PolicyId: policyID, IncludeEvaluationReport: proto.Bool(false),
			ContentData: []*pb.ContentData{textData("hello", nil)}})
		require.NoError(t, err)
		m, err := stream.Recv()
		require.NoError(t, err)
		require.Nil(t, m.PolicyEvaluationReport)
		require.Equal(t, sha("hello"), m.ContentHash)
		_, err = stream.Recv()
		require.Equal(t, io.EOF, err)
	})
}

// TestGRPCOff turns the service off: REST is served as before and an SDK
// call fails to connect.
func TestGRPCOff(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.NoGRPC = true }, func(t *testing.T, env *testEnv) {
		require.Equal(t, http.StatusOK, env.call(http.MethodGet, "/v1/jobs", env.PolicyFirst.Token, "").Status)
		_, err := env.gateway().ListJobs(bearer(context.Background(), env.PolicyFirst.Token), &pb.ListJobsRequest{})
		requireCode(t, err, codes.Unavailable)
	})
}

// TestGRPCMetrics checks gRPC calls are counted beside REST's in /metrics.
func TestGRPCMetrics(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		gw := env.gateway()
		_, err := gw.ListJobs(bearer(context.Background(), env.PolicyFirst.Token), &pb.ListJobsRequest{})
		require.NoError(t, err)
		_, err = gw.GetJob(context.Background(), &pb.GetJobRequest{JobUuid: "x"})
		requireCode(t, err, codes.Unauthenticated)
		require.Equal(t, http.StatusOK, env.call(http.MethodGet, "/v1/jobs", env.PolicyFirst.Token, "").Status)
		r := env.call(http.MethodGet, "/metrics", "", "")
		require.Equal(t, http.StatusOK, r.Status)
		body := string(r.Body)
		require.Contains(t, body, `contenteval_grpc_requests_total{code="OK",method="ListJobs"} 1`)
		require.Contains(t, body, `contenteval_grpc_requests_total{code="Unauthenticated",method="GetJob"} 1`)
		require.Contains(t, body, `contenteval_grpc_request_duration_seconds_count{method="ListJobs"} 1`)
		require.True(t, strings.Contains(body, "contenteval_http_requests_total"), "REST metrics share the registry")
	})
}

// TestGRPCLargeJobFits: a job whose reports pass 4 MiB (100 entries, each
// report repeating 60 KiB of rule text) reaches a client with grpc-go's
// default 4 MiB receive limit, without the rule-by-rule detail; REST still
// has it all.
func TestGRPCLargeJobFits(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		var policy strings.Builder
		for i := range 20 {
			fmt.Fprintf(&policy, "LABEL \"label %d\": \"review\" {\n    =(\"%s\")\n}\n", i, strings.Repeat(fmt.Sprintf("phrase%d ", i), 400)[:2900])
		}
		r, err := env.Client(tok).CreatePolicyWithResponse(context.Background(), client.CreatePolicyRequest{PolicyKey: "big", Text: policy.String()})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		policyID := r.JSON200.Policy.PolicyId
		var data []*pb.ContentData
		for i := range 100 {
			data = append(data, textData(fmt.Sprintf("entry %d", i), map[string]string{"i": fmt.Sprint(i)}))
		}
		gw := env.gateway()
		ctx := bearer(context.Background(), tok)
		created, err := gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: policyID, WaitForCompletion: true, ContentData: data})
		require.NoError(t, err, "the response fits the client's 4 MiB")
		j := created.Job
		require.Equal(t, pb.JobStatus_JOB_STATUS_COMPLETED, j.Status)
		require.True(t, j.Truncated)
		require.Len(t, j.Results, 100)
		for _, res := range j.Results {
			require.Len(t, res.Report.SectionEvaluationReports, 20, "every label's decision is kept")
			require.Empty(t, res.Report.SectionEvaluationReports[0].AssertionEvaluationReports)
			require.NotNil(t, res.Report.ReviewResult)
		}
		require.Equal(t, map[string]string{"i": "7"}, j.ContentData[7].Metadata)

		got, err := gw.GetJob(ctx, &pb.GetJobRequest{JobUuid: j.JobUuid})
		require.NoError(t, err)
		require.True(t, got.Job.Truncated)
		list, err := gw.ListJobs(ctx, &pb.ListJobsRequest{})
		require.NoError(t, err)
		require.Len(t, list.Jobs, 1)
		rest := env.call(http.MethodGet, "/v1/jobs/"+j.JobUuid, tok, "")
		require.Equal(t, http.StatusOK, rest.Status)
		require.Greater(t, len(rest.Body), 4<<20, "REST sends the whole report")
	})
}

// TestGRPCListJobsPageFits: a page whose jobs together pass 4 MiB holds
// fewer jobs, and its token continues after the last one sent.
func TestGRPCListJobsPageFits(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.Role = "api" }, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		policyID := env.createPolicy(tok, "p")
		gw := env.gateway()
		ctx := bearer(context.Background(), tok)
		big := strings.Repeat("m", 15<<10)
		var ids []string
		for range 3 { // 1.5 MB of metadata each: two fit a message, three do not
			var data []*pb.ContentData
			for i := range 100 {
				data = append(data, textData(fmt.Sprint(i), map[string]string{"m": big}))
			}
			env.Clock.Add(time.Second)
			r, err := gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: policyID, ContentData: data})
			require.NoError(t, err)
			ids = append(ids, r.Job.JobUuid)
		}
		first, err := gw.ListJobs(ctx, &pb.ListJobsRequest{})
		require.NoError(t, err)
		require.Len(t, first.Jobs, 2)
		require.Equal(t, []string{ids[2], ids[1]}, []string{first.Jobs[0].JobUuid, first.Jobs[1].JobUuid})
		require.False(t, first.Jobs[0].Truncated, "the jobs are whole; the page is shorter")
		require.NotEmpty(t, first.NextPageToken)
		second, err := gw.ListJobs(ctx, &pb.ListJobsRequest{PageToken: first.NextPageToken})
		require.NoError(t, err)
		require.Len(t, second.Jobs, 1)
		require.Equal(t, ids[0], second.Jobs[0].JobUuid)
		require.Empty(t, second.NextPageToken)
	})
}
