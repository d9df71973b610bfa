package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// evaluateErr opens a stream and returns the error it ends with.
func evaluateErr(ctx context.Context, gw pb.GatewayServiceClient, req *pb.EvaluateRequest) error {
	stream, err := gw.Evaluate(ctx, req)
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			return err
		}
	}
}

// TestGRPCErrors maps every refusal the four methods make to the gRPC code
// of docs/api.md#error-bodies, with the field violations REST reports.
func TestGRPCErrors(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		e := newGRPCErrorEnv(t, env)
		for _, tc := range append(grpcAuthCases(e), grpcArgumentCases(e)...) {
			t.Run(tc.name, func(t *testing.T) {
				st := requireCode(t, tc.call(), tc.code)
				require.NotEmpty(t, st.Message())
				require.NotContains(t, strings.ToLower(st.Message()), "sql")
				var fields []string
				for _, d := range st.Details() {
					if br, ok := d.(*errdetails.BadRequest); ok {
						for _, v := range br.FieldViolations {
							fields = append(fields, v.Field)
						}
					}
				}
				if tc.field == "" {
					require.Empty(t, fields)
				} else {
					require.Equal(t, []string{tc.field}, fields, "%s", st.Message())
				}
			})
		}
	})
}

// grpcErrorEnv is what the cases of TestGRPCErrors call with: a client,
// contexts with each kind of key, a policy and a job of the policy-first
// account, and requests the generated client refuses to encode.
type grpcErrorEnv struct {
	env                             *testEnv
	conn                            *grpc.ClientConn
	gw                              pb.GatewayServiceClient
	pf, lf, anon                    context.Context
	tok, policyID, jobID, createJob string
	text                            []*pb.ContentData
	badUTF8                         []byte
	manyMeta                        map[string]string
}

func newGRPCErrorEnv(t *testing.T, env *testEnv) *grpcErrorEnv {
	t.Helper()
	e := &grpcErrorEnv{env: env, tok: env.PolicyFirst.Token}
	e.policyID = env.createPolicy(e.tok, "p")
	e.conn = env.grpcConn()
	e.gw = pb.NewGatewayServiceClient(e.conn)
	e.pf = bearer(context.Background(), e.tok)
	e.lf = bearer(context.Background(), env.LabelFirst.Token)
	e.anon = context.Background()
	e.text = []*pb.ContentData{textData("hello", nil)}
	created, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: e.text})
	require.NoError(t, err)
	e.jobID = created.Job.JobUuid
	// Requests our generated client refuses to encode, sent as bytes.
	valid, err := proto.Marshal(&pb.CreateJobRequest{PolicyId: e.policyID, ContentData: []*pb.ContentData{textData("XXXX", nil)}})
	require.NoError(t, err)
	e.badUTF8 = bytes.Replace(valid, []byte("XXXX"), []byte("X\xff\xfeX"), 1)
	e.createJob = pb.GatewayService_CreateJob_FullMethodName
	e.manyMeta = map[string]string{}
	for i := range 100_001 {
		e.manyMeta[fmt.Sprint(i)] = ""
	}
	return e
}

// grpcErrorCase is a call and the status it must fail with.
type grpcErrorCase struct {
	name  string
	call  func() error
	code  codes.Code
	field string // the BadRequest field violation, if any
}

// grpcAuthCases are the refusals of authentication, account type and
// scope.
func grpcAuthCases(e *grpcErrorEnv) []grpcErrorCase {
	return []grpcErrorCase{
		{"no key: CreateJob", func() error {
			_, err := e.gw.CreateJob(e.anon, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: e.text})
			return err
		}, codes.Unauthenticated, ""},
		{"no key: GetJob", func() error { _, err := e.gw.GetJob(e.anon, &pb.GetJobRequest{JobUuid: e.jobID}); return err }, codes.Unauthenticated, ""},
		{"no key: ListJobs", func() error { _, err := e.gw.ListJobs(e.anon, &pb.ListJobsRequest{}); return err }, codes.Unauthenticated, ""},
		{"no key: Evaluate", func() error {
			return evaluateErr(e.anon, e.gw, &pb.EvaluateRequest{PolicyId: e.policyID, ContentData: e.text})
		}, codes.Unauthenticated, ""},
		{"malformed key", func() error {
			_, err := e.gw.ListJobs(metadata.AppendToOutgoingContext(e.anon, "authorization", "Bearer nope"), &pb.ListJobsRequest{})
			return err
		}, codes.Unauthenticated, ""},
		{"not a bearer key", func() error {
			_, err := e.gw.ListJobs(metadata.AppendToOutgoingContext(e.anon, "authorization", "Basic "+e.tok), &pb.ListJobsRequest{})
			return err
		}, codes.Unauthenticated, ""},
		{"bad bytes before authentication", func() error { return invokeRaw(e.anon, e.conn, e.createJob, e.badUTF8) }, codes.Unauthenticated, ""},
		{"label-first: CreateJob", func() error {
			_, err := e.gw.CreateJob(e.lf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: e.text})
			return err
		}, codes.FailedPrecondition, ""},
		{"label-first: Evaluate", func() error {
			return evaluateErr(e.lf, e.gw, &pb.EvaluateRequest{PolicyId: e.policyID, ContentData: e.text})
		}, codes.FailedPrecondition, ""},
		{"unknown job", func() error { _, err := e.gw.GetJob(e.pf, &pb.GetJobRequest{JobUuid: "no-such-job"}); return err }, codes.NotFound, ""},
		{"another account's job", func() error {
			other := e.env.newAccount("other", "policy-first")
			_, err := e.gw.GetJob(bearer(e.anon, other.Token), &pb.GetJobRequest{JobUuid: e.jobID})
			return err
		}, codes.NotFound, ""},
		{"unknown policy", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: "no-such-policy", ContentData: e.text})
			return err
		}, codes.NotFound, ""},
		{"unknown policy: Evaluate", func() error {
			return evaluateErr(e.pf, e.gw, &pb.EvaluateRequest{PolicyId: "no-such-policy", ContentData: e.text})
		}, codes.NotFound, ""},
	}
}

// grpcArgumentCases are the refusals of bad arguments and unknown methods.
func grpcArgumentCases(e *grpcErrorEnv) []grpcErrorCase {
	return []grpcErrorCase{
		{"no policy", func() error { _, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{ContentData: e.text}); return err }, codes.InvalidArgument, "policyId"},
		{"no content", func() error { _, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID}); return err }, codes.InvalidArgument, "contentData"},
		{"content without a content field", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: []*pb.ContentData{{ContentType: "e.text/plain"}}})
			return err
		}, codes.InvalidArgument, "contentData[0]"},
		{"empty image", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: []*pb.ContentData{{Content: &pb.ContentData_Image{}}}})
			return err
		}, codes.InvalidArgument, "contentData[0].image"},
		{"threshold out of range", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: e.text, Threshold: proto.Float64(2)})
			return err
		}, codes.InvalidArgument, "threshold"},
		{"webhook not http", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: e.text, Webhook: &pb.CreateJobRequest_Webhook{Url: "ftp://example.com/x"}})
			return err
		}, codes.InvalidArgument, "webhook.url"},
		{"page token of nothing", func() error { _, err := e.gw.ListJobs(e.pf, &pb.ListJobsRequest{PageToken: "garbage"}); return err }, codes.InvalidArgument, "pageToken"},
		{"negative page size", func() error { _, err := e.gw.ListJobs(e.pf, &pb.ListJobsRequest{PageSize: -1}); return err }, codes.InvalidArgument, "pageSize"},
		{"invalid timestamp", func() error {
			_, err := e.gw.ListJobs(e.pf, &pb.ListJobsRequest{Query: &pb.ListJobsRequest_Query{
				UpdatedTimeRange: &pb.TimeRange{Start: &timestamppb.Timestamp{Seconds: 1, Nanos: 2e9}}}})
			return err
		}, codes.InvalidArgument, "query.updated_time_range.start"},
		{"invalid UTF-8", func() error { return invokeRaw(e.pf, e.conn, e.createJob, e.badUTF8) }, codes.InvalidArgument, "content_data[0].text"},
		{"NUL in e.text", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: []*pb.ContentData{textData("a\x00b", nil)}})
			return err
		}, codes.InvalidArgument, "content_data[0].text"},
		{"NUL in a metadata key", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: []*pb.ContentData{textData("a", map[string]string{"k\x00": "v"})}})
			return err
		}, codes.InvalidArgument, "content_data[0].metadata"},
		{"NUL in a stream's policy id", func() error {
			return evaluateErr(e.pf, e.gw, &pb.EvaluateRequest{PolicyId: "p\x00", ContentData: e.text})
		}, codes.InvalidArgument, "policy_id"},
		{"too many values", func() error {
			_, err := e.gw.CreateJob(e.pf, &pb.CreateJobRequest{PolicyId: e.policyID, ContentData: []*pb.ContentData{textData("a", e.manyMeta)}})
			return err
		}, codes.InvalidArgument, "content_data[0].metadata"},
		{"not protobuf", func() error { return invokeRaw(e.pf, e.conn, e.createJob, []byte{0x0a, 0xff}) }, codes.InvalidArgument, "request"},
		{"unknown method", func() error {
			return invokeRaw(e.pf, e.conn, "/clavata.gateway.v1.GatewayService/DeleteJob", nil)
		}, codes.Unimplemented, ""},
	}
}

// TestGRPCLimits covers the refusals of configured limits: the account's
// rate (RESOURCE_EXHAUSTED with when to retry) and the receive limit, which
// is REST's body limit.
func TestGRPCLimits(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.RateRPS, c.RateBurst, c.BodyLimit = 1, 2, 64<<10 }, func(t *testing.T, env *testEnv) {
		gw := env.gateway()
		ctx := bearer(context.Background(), env.PolicyFirst.Token)
		for range 2 {
			_, err := gw.ListJobs(ctx, &pb.ListJobsRequest{})
			require.NoError(t, err)
		}
		var trailer metadata.MD
		_, err := gw.ListJobs(ctx, &pb.ListJobsRequest{}, grpc.Trailer(&trailer))
		st := requireCode(t, err, codes.ResourceExhausted)
		require.Len(t, st.Details(), 1)
		require.Equal(t, int64(1), st.Details()[0].(*errdetails.RetryInfo).RetryDelay.Seconds)
		require.Equal(t, []string{"1000"}, trailer.Get("grpc-retry-pushback-ms"), "grpc-js and grpc-go retry policies wait this long")
		_, err = gw.ListJobs(bearer(context.Background(), env.LabelFirst.Token), &pb.ListJobsRequest{})
		require.NoError(t, err, "buckets are per account")

		// Two tokens: the caller is admitted before its request is read, so
		// the call too large to read takes one as well.
		env.Clock.Add(2 * time.Second)
		big := strings.Repeat("a", 65<<10)
		_, err = gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: "p", ContentData: []*pb.ContentData{textData(big, nil)}})
		requireCode(t, err, codes.ResourceExhausted)
		_, err = gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: "p", ContentData: []*pb.ContentData{textData(big[:60<<10], nil)}})
		requireCode(t, err, codes.NotFound) // under the limit: read, and refused for its policy
	})
}
