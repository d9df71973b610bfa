package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/contenteval/contenteval/tracing"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it keeps every span (and
// every attribute, resource ones included) it is sent.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	attrs []*commonpb.KeyValue
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if err != nil {
			t.Errorf("OTLP receiver: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			r.attrs = append(r.attrs, rs.GetResource().GetAttributes()...)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, s)
					r.attrs = append(r.attrs, s.Attributes...)
					for _, ev := range s.Events {
						r.attrs = append(r.attrs, ev.Attributes...)
					}
				}
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// inTrace returns the spans of trace id (hex) by name.
func (r *otlpReceiver) inTrace(id string) map[string][]*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]*tracepb.Span{}
	for _, s := range r.spans {
		if fmt.Sprintf("%x", s.TraceId) == id {
			out[s.Name] = append(out[s.Name], s)
		}
	}
	return out
}

// withAttr returns the spans named name with attribute key = value.
func (r *otlpReceiver) withAttr(name, key, value string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		for _, a := range s.Attributes {
			if s.Name == name && a.Key == key && a.GetValue().GetStringValue() == value {
				out = append(out, s)
			}
		}
	}
	return out
}

// holding returns the attributes whose value contains text.
func (r *otlpReceiver) holding(text string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.attrs {
		if strings.Contains(a.GetValue().String(), text) {
			out = append(out, a.Key)
		}
	}
	return out
}

// traceparentRecorder forwards to a fake model backend and records the
// traceparent headers it is sent.
func traceparentRecorder(t *testing.T, target string) (string, func() []string) {
	u, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Traceparent"))
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestTracingSpans(t *testing.T) {
	receiver, endpoint := newOTLPReceiver(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	stop, err := tracing.Setup(t.Context(), os.Getenv)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, stop(context.Background())) })

	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fake := modelbackendtest.New(modelbackendtest.VLLM, guardDecides)
			t.Cleanup(fake.Close)
			proxied, traceparents := traceparentRecorder(t, fake.URL)
			file := filepath.Join(t.TempDir(), "backends.yaml")
			require.NoError(t, os.WriteFile(file, fmt.Appendf(nil,
				"default: guard\nbackends:\n  - name: guard\n    url: %s/v1\n    model: llama-guard-3-8b\n    profile: llama-guard\n", proxied), 0o600))
			env := startServer(t, b, func(c *Config) { batchConfig(c); c.BackendsFile = file })
			hooks, received := webhookReceiver(t, mustAccountSecret(t, env))

			// Unique per backend: the parallel subtest must not find it.
			content := "a threat of violence, a scam, a weapon against a person; marker " + b.Name + "-7f3c9a"
			tok := env.PolicyFirst.Token
			r, err := env.Client(tok).CreatePolicyWithResponse(t.Context(), client.CreatePolicyRequest{PolicyKey: "model", Text: modelPolicyText})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			resp := env.call(http.MethodPost, "/v1/jobs", tok, mustJSON(t, map[string]any{
				"policyId": r.JSON200.Policy.PolicyId, "waitForCompletion": true,
				"contentData": []any{map[string]any{"text": content}},
				"webhook":     map[string]any{"url": hooks.URL + "/hook"},
			}))
			require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
			jobID := jsonMap(t, resp.Body)["job"].(map[string]any)["jobUuid"].(string)
			hook := waitForWebhooks(t, received, 1)[0]

			sent := traceparents()
			require.NotEmpty(t, sent)
			parts := strings.Split(sent[0], "-")
			require.Len(t, parts, 4, "traceparent %q", sent[0])
			traceID := parts[1]
			for _, tp := range sent {
				require.Contains(t, tp, "-"+traceID+"-", "every backend call is in the request's trace")
			}

			want := []string{"jobs.run_sync", "jobs.evaluate_item", "modelbackend.call", "HTTP POST"}
			require.Eventually(t, func() bool {
				got := receiver.inTrace(traceID)
				for _, name := range want {
					if len(got[name]) == 0 {
						return false
					}
				}
				return hasServerSpan(got) && hasDBSpan(got) &&
					len(receiver.withAttr("webhooks.deliver", "contenteval.job.id", jobID)) > 0
			}, 20*time.Second, 20*time.Millisecond, "spans of trace %s: %v", traceID, names(receiver.inTrace(traceID)))

			// The delivery runs later, from the outbox, under the deliverer's
			// context: it is in the request's trace only through the trace
			// context stored with the event.
			for _, s := range receiver.withAttr("webhooks.deliver", "contenteval.job.id", jobID) {
				got := fmt.Sprintf("%x", s.TraceId)
				require.Equal(t, traceID, got, "the webhook delivery span is in the trace of the request that completed the job; its trace has %v", names(receiver.inTrace(got)))
			}
			require.Contains(t, hook.header.Get("Traceparent"), "-"+traceID+"-", "the webhook request carries the request's trace")

			checkQueuedJobTrace(t, env, receiver, hooks.URL, received, r.JSON200.Policy.PolicyId, content, b.Name)

			require.Empty(t, receiver.holding(b.Name+"-7f3c9a"), "no attribute holds the content")
		})
	}
}

// checkQueuedJobTrace queues an asynchronous job by a request that comes
// in with a traceparent and checks that the worker's run, its evaluation
// and the job's webhook are in that trace.
func checkQueuedJobTrace(t *testing.T, env *testEnv, receiver *otlpReceiver, hooksURL string, received func() []receivedWebhook, policyID, content, backend string) {
	t.Helper()
	tok := env.PolicyFirst.Token
	// An asynchronous job, queued by a request that comes in with a
	// traceparent: a worker claims it later under a context of its
	// own, so its run is in that trace only through the trace
	// context stored with the job.
	queuedTrace := fmt.Sprintf("%x", sha256.Sum256([]byte(backend)))[:32]
	asyncJob, err := env.Client(tok).CreateJobWithResponse(t.Context(), client.CreateJobRequest{
		// Other content than the first job's, which the backend cache holds.
		PolicyId: policyID, ContentData: []client.ContentData{textItem("queued: "+content, nil)},
		Webhook: &client.Webhook{Url: hooksURL + "/hook"},
	}, func(_ context.Context, req *http.Request) error {
		req.Header.Set("Traceparent", "00-"+queuedTrace+"-b7ad6b7169203331-01")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, asyncJob.StatusCode(), "%s", asyncJob.Body)
	asyncID := asyncJob.JSON200.Job.JobUuid
	require.Equal(t, client.JOBSTATUSCOMPLETED, env.waitForJob(tok, asyncID).Status)
	require.Eventually(t, func() bool {
		got := receiver.inTrace(queuedTrace)
		return len(receiver.withAttr("jobs.run", "contenteval.job.id", asyncID)) > 0 &&
			hasServerSpan(got) && len(got["modelbackend.call"]) > 0
	}, 20*time.Second, 20*time.Millisecond, "spans of trace %s: %v", queuedTrace, names(receiver.inTrace(queuedTrace)))
	queued := receiver.inTrace(queuedTrace)
	for _, run := range receiver.withAttr("jobs.run", "contenteval.job.id", asyncID) {
		require.Equal(t, queuedTrace, fmt.Sprintf("%x", run.TraceId), "the worker's run is in the trace of the request that queued the job")
		parent := spanByID(queued, run.ParentSpanId)
		require.NotNil(t, parent, "the run's parent is a span of that trace")
		require.Equal(t, tracepb.Span_SPAN_KIND_SERVER, parent.Kind, "the run is a child of the request's server span")
	}
	require.NotEmpty(t, queued["jobs.evaluate_item"], "the worker's evaluation is in the trace of the request that queued the job")
	// The worker records the outcome, and so writes the webhook
	// event, under a context of its own: the event takes the
	// trace context stored with the job.
	for _, h := range waitForWebhooks(t, received, 2) {
		if bytes.Contains(h.body, []byte(asyncID)) {
			require.Contains(t, h.header.Get("Traceparent"), "-"+queuedTrace+"-", "the queued job's webhook carries the queuing request's trace")
		}
	}
	require.Eventually(t, func() bool {
		return len(receiver.withAttr("webhooks.deliver", "contenteval.job.id", asyncID)) > 0
	}, 20*time.Second, 20*time.Millisecond)
	for _, s := range receiver.withAttr("webhooks.deliver", "contenteval.job.id", asyncID) {
		require.Equal(t, queuedTrace, fmt.Sprintf("%x", s.TraceId), "the queued job's webhook delivery is in the queuing request's trace")
	}
}

func spanByID(byName map[string][]*tracepb.Span, id []byte) *tracepb.Span {
	for _, ss := range byName {
		for _, s := range ss {
			if bytes.Equal(s.SpanId, id) {
				return s
			}
		}
	}
	return nil
}

func hasServerSpan(byName map[string][]*tracepb.Span) bool {
	for _, ss := range byName {
		for _, s := range ss {
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
				return true
			}
		}
	}
	return false
}

func hasDBSpan(byName map[string][]*tracepb.Span) bool {
	for name := range byName {
		if strings.HasPrefix(name, "sql.") {
			return true
		}
	}
	return false
}

func names(byName map[string][]*tracepb.Span) []string {
	out := make([]string, 0, len(byName))
	for n := range byName {
		out = append(out, n)
	}
	return out
}

func mustAccountSecret(t *testing.T, env *testEnv) string {
	acct, err := env.Main.Accounts.GetAccount(t.Context(), env.PolicyFirst.ID)
	require.NoError(t, err)
	return acct.WebhookSecret
}
