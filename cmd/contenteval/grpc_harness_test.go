package main

import (
	"context"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"testing"
	"time"

	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcConn dials the server's port as the SDKs do (plain HTTP/2, insecure
// credentials) and closes the connection when t ends.
func (e *testEnv) grpcConn(opts ...grpc.DialOption) *grpc.ClientConn {
	e.t.Helper()
	conn, err := grpc.NewClient(e.Main.Addr(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// gateway returns our generated client of the GatewayService.
func (e *testEnv) gateway() pb.GatewayServiceClient {
	e.t.Helper()
	return pb.NewGatewayServiceClient(e.grpcConn())
}

// bearer is ctx carrying the key as the SDKs send it.
func bearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// requireCode asserts err is a gRPC status with code and returns it.
func requireCode(t *testing.T, err error, code codes.Code) *status.Status {
	t.Helper()
	require.Error(t, err)
	st, ok := status.FromError(err)
	require.True(t, ok, "not a status: %v", err)
	require.Equal(t, code, st.Code(), "%v", err)
	return st
}

// waitForGRPCJob polls GetJob until the job is terminal.
func waitForGRPCJob(t *testing.T, gw pb.GatewayServiceClient, token, id string) *pb.Job {
	t.Helper()
	var job *pb.Job
	// generous: -race on a busy 2-core machine
	testwait.For(t, 90*time.Second, "job "+id+" to end", func() (bool, error) {
		r, err := gw.GetJob(bearer(context.Background(), token), &pb.GetJobRequest{JobUuid: id})
		require.NoError(t, err)
		job = r.Job
		switch job.Status {
		case pb.JobStatus_JOB_STATUS_COMPLETED, pb.JobStatus_JOB_STATUS_FAILED, pb.JobStatus_JOB_STATUS_CANCELED:
			return true, nil
		}
		require.Empty(t, job.Results, "an unfinished job carries no results")
		return false, fmt.Errorf("still %s", job.Status)
	})
	return job
}

// rawCodec sends bytes as they are, for requests our generated client
// refuses to encode (invalid UTF-8, malformed wire data).
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

// invokeRaw calls a unary method with raw request bytes.
func invokeRaw(ctx context.Context, conn *grpc.ClientConn, method string, req []byte) error {
	var resp []byte
	return conn.Invoke(ctx, method, &req, &resp, grpc.ForceCodecV2(rawCodec{}))
}

func textData(s string, meta map[string]string) *pb.ContentData {
	return &pb.ContentData{Content: &pb.ContentData_Text{Text: s}, Metadata: meta}
}

// section returns the report's section named name.
func section(t *testing.T, r *pb.PolicyEvaluationReport, name string) *pb.PolicyEvaluationReport_SectionEvaluationReport {
	t.Helper()
	for _, s := range r.GetSectionEvaluationReports() {
		if s.GetName() == name {
			return s
		}
	}
	t.Fatalf("no section %q in %v", name, r)
	return nil
}
