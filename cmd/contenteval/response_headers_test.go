package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/contenteval/contenteval/gen/client"
)

// TestStoredBytesAreNotSniffed: the batch files (the input upload's answer,
// the output download) say nosniff, so that what a client stored is never
// taken by a browser for HTML or script.
func TestStoredBytesAreNotSniffed(t *testing.T) {
	forEachBackend(t, batchConfig, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: env.createPolicy(tok, "p")})
		up := putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\nr1,text,<html><script>alert(1)</script></html>\n")
		require.Equal(t, http.StatusOK, up.Status, "%s", up.Body)
		require.Equal(t, "nosniff", up.Header.Get("X-Content-Type-Options"), "upload")
		b := env.waitForBatch(t, tok, created.BatchJobId)
		require.Equal(t, client.BATCHJOBSTATECOMPLETED, b.State, "%+v", b.Error)
		out := getFile(t, *b.OutputFileUrl)
		require.Equal(t, http.StatusOK, out.Status, "%s", out.Body)
		require.Equal(t, "application/x-ndjson", out.Header.Get("Content-Type"))
		require.Equal(t, "nosniff", out.Header.Get("X-Content-Type-Options"), "output")
	})
}

// TestRequestIDSameRuleOnBothAPIs: REST and gRPC keep a client's request id
// that is a safe token and replace any other with a new one.
func TestRequestIDSameRuleOnBothAPIs(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		gw := env.gateway()
		for _, tc := range []struct {
			name, id string
			kept     bool
		}{
			{"token", "req-42.a_B", true},
			{"space", "req 42", false},
			{"quote and braces", `"}{"level":"ERROR"`, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, env.URL+"/v1/jobs", nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("X-Request-Id", tc.id)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.Equal(t, http.StatusOK, resp.StatusCode)
				rest := resp.Header.Get("X-Request-Id")

				var trailer metadata.MD
				ctx := metadata.AppendToOutgoingContext(bearer(context.Background(), tok), "x-request-id", tc.id)
				_, err = gw.ListJobs(ctx, &pb.ListJobsRequest{}, grpc.Trailer(&trailer))
				require.NoError(t, err)
				require.Len(t, trailer.Get("x-request-id"), 1)
				rpc := trailer.Get("x-request-id")[0]

				if tc.kept {
					require.Equal(t, tc.id, rest, "REST")
					require.Equal(t, tc.id, rpc, "gRPC")
					return
				}
				require.Regexp(t, `^[0-9a-f]{32}$`, rest, "REST replaces %q", tc.id)
				require.Regexp(t, `^[0-9a-f]{32}$`, rpc, "gRPC replaces %q", tc.id)
			})
		}
	})
}
