package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

type receivedWebhook struct {
	header http.Header
	body   []byte
}

// webhookReceiver verifies every delivery with an independent Standard
// Webhooks implementation and records it.
func webhookReceiver(t *testing.T, secret string) (*httptest.Server, func() []receivedWebhook) {
	t.Helper()
	verifier, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	var mu sync.Mutex
	var got []receivedWebhook
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			t.Errorf("webhook signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got = append(got, receivedWebhook{header: r.Header.Clone(), body: body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []receivedWebhook {
		mu.Lock()
		defer mu.Unlock()
		return append([]receivedWebhook(nil), got...)
	}
}

func waitForWebhooks(t *testing.T, received func() []receivedWebhook, n int) []receivedWebhook {
	t.Helper()
	var got []receivedWebhook
	testwait.For(t, 20*time.Second, fmt.Sprintf("%d webhooks", n), func() (bool, error) {
		got = received()
		return len(got) >= n, fmt.Errorf("got %d", len(got))
	})
	return got
}

func TestJobWebhooks(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true; c.WebhookPoll = 20 * time.Millisecond }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		acct, err := env.Main.Accounts.GetAccount(ctx, env.PolicyFirst.ID)
		require.NoError(t, err)
		srv, received := webhookReceiver(t, acct.WebhookSecret)
		policyID := env.createPolicy(env.PolicyFirst.Token, "hooks")
		hook := &client.Webhook{Url: srv.URL + "/hook", ExtraHeaders: &client.StringMap{"Tenant": "t-1"}}

		done := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{
			PolicyId: policyID, ContentData: []client.ContentData{textItem("hello there", nil)}, Webhook: hook,
		})
		notImage := []byte("this is not an image")
		failed := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{
			PolicyId: policyID, ContentData: []client.ContentData{{Image: &notImage}}, Webhook: hook,
		})
		env.waitForJob(env.PolicyFirst.Token, done.JobUuid)
		env.waitForJob(env.PolicyFirst.Token, failed.JobUuid)

		got := waitForWebhooks(t, received, 2)
		byJob := map[string]struct {
			Type string     `json:"type"`
			Job  client.Job `json:"job"`
		}{}
		for _, w := range got {
			require.Equal(t, "t-1", w.header.Get("X-Webhook-Tenant"))
			require.Equal(t, "application/json", w.header.Get("Content-Type"))
			var p struct {
				Type string     `json:"type"`
				Job  client.Job `json:"job"`
			}
			require.NoError(t, json.Unmarshal(w.body, &p))
			// The payload's job is the API's Job.
			doc, _ := loadSpec(t)
			var raw map[string]any
			require.NoError(t, json.Unmarshal(w.body, &raw))
			require.NoError(t, doc.Components.Schemas["Job"].Value.VisitJSON(raw["job"]))
			byJob[p.Job.JobUuid] = p
		}
		require.Equal(t, "job.completed", byJob[done.JobUuid].Type)
		require.Equal(t, client.JOBSTATUSCOMPLETED, byJob[done.JobUuid].Job.Status)
		require.NotNil(t, byJob[done.JobUuid].Job.Results)
		require.Equal(t, "job.failed", byJob[failed.JobUuid].Type)
		require.NotNil(t, byJob[failed.JobUuid].Job.Error)

		// Delivered once each: nothing more arrives. Once every outbox row
		// of the account is delivered (its POST answered before the row is
		// marked), every delivery it will ever make has reached the
		// receiver: a duplicate event, or a second attempt at one, would
		// be counted here.
		type outboxRow struct {
			Type        string     `db:"type"`
			SubjectID   string     `db:"subject_id"`
			Attempts    int        `db:"attempts"`
			DeliveredAt *time.Time `db:"delivered_at"`
			FailedAt    *time.Time `db:"failed_at"`
		}
		var rows []outboxRow
		testwait.For(t, 20*time.Second, "the outbox to be delivered", func() (bool, error) {
			rows = nil
			require.NoError(t, env.Main.DB.SelectContext(ctx, &rows, env.Main.DB.Rebind(
				`SELECT type, subject_id, attempts, delivered_at, failed_at FROM webhook_events WHERE account_id = ?`), env.PolicyFirst.ID))
			pending := 0
			for _, r := range rows {
				if r.DeliveredAt == nil && r.FailedAt == nil {
					pending++
				}
			}
			return pending == 0, fmt.Errorf("%d events pending", pending)
		})
		require.Len(t, received(), 2, "each job's webhook is delivered once")
		require.Len(t, rows, 2, "one outbox event per job")
		for _, r := range rows {
			require.NotNil(t, r.DeliveredAt, "event %s of %s", r.Type, r.SubjectID)
			require.Equal(t, 1, r.Attempts, "event %s of %s", r.Type, r.SubjectID)
		}
	})
}

func TestJobWebhookURLRules(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		policyID := env.createPolicy(env.PolicyFirst.Token, "hooks")
		for _, tc := range []struct{ name, url string }{
			{"loopback", "https://127.0.0.1/hook"},
			{"private", "https://10.0.0.8/hook"},
			{"metadata", "https://169.254.169.254/latest"},
			{"plain http", "http://hooks.example.com/x"},
			{"not a URL", "hooks"},
			{"other scheme", "ftp://example.com/"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body, _ := json.Marshal(map[string]any{
					"policyId": policyID, "contentData": []any{map[string]string{"text": "x"}},
					"webhook": map[string]string{"url": tc.url},
				})
				r := env.call(http.MethodPost, "/v1/jobs", env.PolicyFirst.Token, string(body))
				m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
				require.Contains(t, fieldViolations(t, m), "webhook.url")
			})
		}
	})
}
