package main

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/contenteval/contenteval/gen/clavatapb"
)

// TestGRPCValidKeyMemory: CreateJob calls of 30 MiB with a valid key, all
// on one connection. Only --grpc-conn-max-receiving (2) of them are
// received at once, so the bytes in flight are 2 x 30 MiB and the peak RSS
// must grow less than 8 x that + 64 MiB; 32 such calls reached 991 MiB.
// CONTENTEVAL_EVALMEM_SCALE=full sends 32 calls (16 by default);
// CONTENTEVAL_EVALMEM_BIN measures another build.
func TestGRPCValidKeyMemory(t *testing.T) {
	h := prepareHostileProcess(t)
	if b := os.Getenv("CONTENTEVAL_EVALMEM_BIN"); b != "" {
		h.bin = b
	}
	calls := 16
	if os.Getenv("CONTENTEVAL_EVALMEM_SCALE") == "full" {
		calls = 32
	}
	const connReceiving = 2
	req, err := proto.Marshal(&pb.CreateJobRequest{PolicyId: h.pol,
		ContentData: []*pb.ContentData{textData(strings.Repeat("lorem ipsum ", 30<<20/12), nil)}})
	require.NoError(t, err)
	srv := startProcess(t, h.bin, h.dir, h.dbURL, h.keyFile)
	conn, err := grpc.NewClient(strings.TrimPrefix(srv.url, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx := bearer(context.Background(), h.valid)
	_, err = pb.NewGatewayServiceClient(conn).ListJobs(ctx, &pb.ListJobsRequest{})
	require.NoError(t, err)
	before := srv.peakRSS(t)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = invokeRaw(ctx, conn, pb.GatewayService_CreateJob_FullMethodName, req) })
	}
	wg.Wait()
	after := srv.peakRSS(t)
	growth, bound := after-before, int64(8*connReceiving*len(req))+64<<20
	t.Logf("%d x %.1f MiB on one connection, peak RSS %.0f -> %.0f MiB, growth %.0f MiB (bound %.0f MiB)",
		calls, mib(int64(len(req))), mib(before), mib(after), mib(growth), mib(bound))
	for _, err := range errs {
		// A text of 30 MiB is over --job-max-text-bytes: refused once read.
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	}
	require.Less(t, growth, bound, "peak RSS grew %.0f MiB", mib(growth))
}
