package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// requirePrecheckFailure asserts err is the CANCELED precheck rejection
// with the detail the Go SDK decodes (details[0], the content hash as a
// string value) and returns the detail.
func requirePrecheckFailure(t *testing.T, err error, typ pb.PrecheckFailureType, img []byte) *pb.PrecheckFailure {
	t.Helper()
	st := requireCode(t, err, codes.Canceled)
	require.NotEmpty(t, st.Details())
	pf, ok := st.Details()[0].(*pb.PrecheckFailure)
	require.True(t, ok, "details[0] is %T", st.Details()[0])
	require.Equal(t, typ, pf.Type)
	require.Equal(t, imaging.ContentHash(img), pf.Details.GetStringValue())
	require.NotEmpty(t, pf.Message)
	return pf
}

func TestGRPCPrecheck(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		bad := testPNG(t, "KNOWN BAD")
		sum := md5.Sum(bad)
		_, err := env.Main.Precheck.Import(ctx, "known", imaging.KindMD5, strings.NewReader(hex.EncodeToString(sum[:])+"\n"))
		require.NoError(t, err)
		require.NoError(t, env.Main.Precheck.Reload(ctx))
		corrupt := []byte("\x89PNG\r\n\x1a\nbroken")
		policyID := env.createPolicy(tok, "p")
		gw := env.gateway()
		auth := bearer(ctx, tok)
		image := func(b []byte) *pb.ContentData { return &pb.ContentData{Content: &pb.ContentData_Image{Image: b}} }

		// Waited for: the call is refused.
		_, err = gw.CreateJob(auth, &pb.CreateJobRequest{PolicyId: policyID, WaitForCompletion: true,
			ContentData: []*pb.ContentData{textData("x", nil), image(bad)}})
		pf := requirePrecheckFailure(t, err, pb.PrecheckFailureType_PRECHECK_FAILURE_TYPE_NCMEC, bad)
		require.Equal(t, pb.PrecheckMatchConfidence_PRECHECK_MATCH_CONFIDENCE_EXACT, pf.MatchConfidence)
		_, err = gw.CreateJob(auth, &pb.CreateJobRequest{PolicyId: policyID, WaitForCompletion: true,
			ContentData: []*pb.ContentData{image(corrupt)}})
		pf = requirePrecheckFailure(t, err, pb.PrecheckFailureType_PRECHECK_FAILURE_TYPE_INVALID_IMAGE, corrupt)
		require.Equal(t, pb.PrecheckMatchConfidence_PRECHECK_MATCH_CONFIDENCE_UNSPECIFIED, pf.MatchConfidence)

		// Queued: the job fails with the reason, as in REST.
		created, err := gw.CreateJob(auth, &pb.CreateJobRequest{PolicyId: policyID, ContentData: []*pb.ContentData{image(bad)}})
		require.NoError(t, err)
		j := waitForGRPCJob(t, gw, tok, created.Job.JobUuid)
		require.Equal(t, pb.JobStatus_JOB_STATUS_FAILED, j.Status)
		require.Equal(t, "JOB_ERROR_REASON_CONTENT_BLOCKED", j.Error.Reason)

		// A stream sends the entries before the rejected one, then ends with
		// the rejection; what follows is not evaluated.
		stream, err := gw.Evaluate(auth, &pb.EvaluateRequest{PolicyId: policyID,
			ContentData: []*pb.ContentData{textData("hello", nil), image(bad), textData("i will kill you", nil)}})
		require.NoError(t, err)
		first, err := stream.Recv()
		require.NoError(t, err)
		require.Equal(t, sha("hello"), first.ContentHash)
		_, err = stream.Recv()
		requirePrecheckFailure(t, err, pb.PrecheckFailureType_PRECHECK_FAILURE_TYPE_NCMEC, bad)
		j = waitForGRPCJob(t, gw, tok, first.JobUuid)
		require.Equal(t, pb.JobStatus_JOB_STATUS_CANCELED, j.Status)
	})
}

// slowURL serves nothing until the request ends (the fetcher gives up)
// and counts and announces the requests it gets.
type slowURL struct {
	*httptest.Server
	hits    atomic.Int32
	started chan struct{}
	ended   chan struct{}
}

func newSlowURL(t *testing.T) *slowURL {
	s := &slowURL{started: make(chan struct{}, 16), ended: make(chan struct{}, 16)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.started <- struct{}{}
		<-r.Context().Done()
		s.ended <- struct{}{}
	}))
	t.Cleanup(s.Close)
	return s
}

func waitFor(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(60 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestGRPCStreamCanceledByClient: a client that cancels its stream stops
// the entry in progress, and the job is recorded canceled.
func TestGRPCStreamCanceledByClient(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true }, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		slow := newSlowURL(t)
		policyID := env.createPolicy(tok, "p")
		gw := env.gateway()
		ctx, cancel := context.WithCancel(bearer(context.Background(), tok))
		defer cancel()
		stream, err := gw.Evaluate(ctx, &pb.EvaluateRequest{PolicyId: policyID, ContentData: []*pb.ContentData{
			textData("hello", nil), {Content: &pb.ContentData_ImageUrl{ImageUrl: slow.URL + "/img.png"}}, textData("after", nil),
		}})
		require.NoError(t, err)
		first, err := stream.Recv()
		require.NoError(t, err)
		waitFor(t, slow.started, "the second entry's fetch")
		cancel()
		_, err = stream.Recv()
		requireCode(t, err, codes.Canceled)
		waitFor(t, slow.ended, "the fetch to be abandoned")
		j := waitForGRPCJob(t, gw, tok, first.JobUuid)
		require.Equal(t, pb.JobStatus_JOB_STATUS_CANCELED, j.Status)
		require.Empty(t, j.Results)
		require.Equal(t, int32(1), slow.hits.Load())
	})
}

// TestGRPCGracefulShutdown: shutting down refuses new calls and lets the
// calls in flight, gRPC and REST, finish.
func TestGRPCGracefulShutdown(t *testing.T) {
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			env, stop, served := startStoppableServer(t, b, nil, func(c *Config) { c.AllowPrivateURLs, c.ShutdownTimeout = true, time.Minute })
			defer stop()
			tok := env.PolicyFirst.Token
			policyID := env.createPolicy(tok, "p")

			// The image server answers once the test says so.
			release := make(chan struct{})
			hit := make(chan struct{}, 4)
			img := testPNG(t, "X")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hit <- struct{}{}
				<-release
				_, _ = w.Write(img)
			}))
			defer srv.Close()
			imageURL := func(path string) *pb.ContentData {
				return &pb.ContentData{Content: &pb.ContentData_ImageUrl{ImageUrl: srv.URL + path}}
			}

			gw := env.gateway()
			grpcDone := make(chan error, 1)
			var created *pb.CreateJobResponse
			go func() {
				var err error
				created, err = gw.CreateJob(bearer(context.Background(), tok), &pb.CreateJobRequest{PolicyId: policyID,
					WaitForCompletion: true, ContentData: []*pb.ContentData{imageURL("/grpc.png")}})
				grpcDone <- err
			}()
			restDone := make(chan rawResponse, 1)
			go func() {
				restDone <- env.call(http.MethodPost, "/v1/jobs", tok,
					`{"policyId":"`+policyID+`","waitForCompletion":true,"contentData":[{"imageUrl":"`+srv.URL+`/rest.png"}]}`)
			}()
			waitFor(t, hit, "the gRPC call's fetch")
			waitFor(t, hit, "the REST call's fetch")

			stop()
			// New connections are refused once the listener is closed.
			require.Eventually(t, func() bool {
				_, err := pb.NewGatewayServiceClient(env.grpcConn()).ListJobs(bearer(context.Background(), tok), &pb.ListJobsRequest{})
				return status.Code(err) == codes.Unavailable
			}, 30*time.Second, 10*time.Millisecond)
			close(release)

			require.NoError(t, <-grpcDone, "the call in flight finished")
			require.Equal(t, pb.JobStatus_JOB_STATUS_COMPLETED, created.Job.Status)
			r := <-restDone
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			select {
			case err := <-served:
				require.NoError(t, err)
			case <-time.After(60 * time.Second):
				t.Fatal("the server did not stop")
			}
		})
	}
}

// startStoppableServer is startServerOn for the tests that stop the server
// themselves (stop) and read how Serve ended (served), or read its log
// (log: nil discards it).
func startStoppableServer(t *testing.T, b persistencetest.Backend, log io.Writer, configure func(*Config)) (*testEnv, context.CancelFunc, <-chan error) {
	t.Helper()
	cfg := testConfig(t)
	if configure != nil {
		configure(&cfg)
	}
	clock := &testClock{now: time.Now().UTC().Truncate(time.Second)}
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard, Clock: clock, DB: b.Open(t)}
	if log != nil {
		m.Log = newLogger(log, "info")
	}
	require.NoError(t, m.Open(context.Background(), false))
	require.NoError(t, m.Listen())
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		served <- m.Serve(ctx)
		close(finished)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-finished:
		case <-time.After(60 * time.Second):
			t.Error("the server did not stop")
		}
	})
	env := &testEnv{t: t, Backend: b.Name, Main: m, URL: "http://" + m.Addr(), Clock: clock}
	env.PolicyFirst = env.newAccount("policy", domain.AccountPolicyFirst)
	return env, stop, served
}

// lockedBuffer is a log destination written by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) lines() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(l.b.Bytes(), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestGRPCRequestLog: each call writes one request log line, as REST does,
// with its request id, method, code and account.
func TestGRPCRequestLog(t *testing.T) {
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			var log lockedBuffer
			env, _, _ := startStoppableServer(t, b, &log, nil)
			gw := env.gateway()
			ctx := metadata.AppendToOutgoingContext(bearer(context.Background(), env.PolicyFirst.Token), "x-request-id", "req-42")
			_, err := gw.ListJobs(ctx, &pb.ListJobsRequest{})
			require.NoError(t, err)
			_, err = gw.GetJob(bearer(context.Background(), env.PolicyFirst.Token), &pb.GetJobRequest{JobUuid: "nope"})
			requireCode(t, err, codes.NotFound)
			var calls []map[string]any
			require.Eventually(t, func() bool {
				calls = nil
				for _, l := range log.lines() {
					if l["msg"] == "request" && l["protocol"] == "grpc" {
						calls = append(calls, l)
					}
				}
				return len(calls) == 2
			}, 10*time.Second, 10*time.Millisecond)
			require.Equal(t, "req-42", calls[0]["request_id"], "the client's id is kept")
			require.Equal(t, "/clavata.gateway.v1.GatewayService/ListJobs", calls[0]["method"])
			require.Equal(t, "ListJobs", calls[0]["operation"])
			require.Equal(t, "OK", calls[0]["code"])
			require.Equal(t, env.PolicyFirst.ID, calls[0]["account"])
			require.Equal(t, "NotFound", calls[1]["code"])
			require.Len(t, calls[1]["request_id"], 32, "a new id when the client sends none")
		})
	}
}

// TestGRPCItemDeadline: an entry that overruns its budget ends the stream
// with DEADLINE_EXCEEDED, and a waited-for job fails with the reason.
func TestGRPCItemDeadline(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs, c.ItemDeadline = true, time.Second }, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		slow := newSlowURL(t)
		policyID := env.createPolicy(tok, "p")
		gw := env.gateway()
		ctx := bearer(context.Background(), tok)
		stalled := &pb.ContentData{Content: &pb.ContentData_ImageUrl{ImageUrl: slow.URL + "/img.png"}}
		err := evaluateErr(ctx, gw, &pb.EvaluateRequest{PolicyId: policyID, ContentData: []*pb.ContentData{stalled}})
		requireCode(t, err, codes.DeadlineExceeded)

		created, err := gw.CreateJob(ctx, &pb.CreateJobRequest{PolicyId: policyID, WaitForCompletion: true, ContentData: []*pb.ContentData{stalled}})
		require.NoError(t, err)
		require.Equal(t, pb.JobStatus_JOB_STATUS_FAILED, created.Job.Status)
		require.Equal(t, string(domain.ReasonExecutionDeadlineExceeded), created.Job.Error.Reason)
	})
}
