package webhooks_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/webhooks"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/contenteval/contenteval/safehttp"
)

// The deliverer on the real outbox (both backends): signed deliveries an
// independent implementation verifies, exponential backoff, giving up after
// the retry window.

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fixedClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type staticPayloads struct{}

func (staticPayloads) Render(_ context.Context, e *domain.WebhookEvent) ([]byte, error) {
	return []byte(fmt.Sprintf(`{"type":%q,"job":{"jobUuid":%q}}`, e.Type, e.SubjectID)), nil
}

func TestWebhookOutboxDelivery(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
		acct := &domain.Account{ID: "a1", Name: "a1", Type: domain.AccountLabelFirst, Created: t0, Updated: t0}
		acct.WebhookSecret = secret
		accounts := persistence.NewAccounts(db)
		require.NoError(t, accounts.CreateAccount(ctx, acct))

		verifier, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		var mu sync.Mutex
		var got []http.Header
		fail := 2 // the receiver fails twice, then accepts
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			// An independent implementation checks our signature.
			require.NoError(t, verifier.VerifyIgnoringTimestamp(body, r.Header))
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r.Header.Clone())
			if fail > 0 {
				fail--
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		defer recv.Close()

		store := persistence.NewWebhooks(db)
		clock := &fixedClock{t: persistence.StoredTime(t0)}
		require.NoError(t, store.EnqueueWebhook(ctx, &domain.WebhookEvent{
			ID: "evt1", AccountID: "a1", URL: recv.URL + "/hook", Headers: map[string]string{"Tenant": "t-9"},
			Type: "job.completed", SubjectKind: "job", SubjectID: "job-1", Created: clock.Now(),
		}))
		d := &webhooks.Deliverer{
			Store: store, Payloads: staticPayloads{}, Accounts: accounts, Clock: clock,
			Poster: safehttp.New(safehttp.Config{AllowPrivate: true}),
			Log:    slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "w1",
		}
		n, err := d.DeliverDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		// Not due again until the backoff passed.
		n, err = d.DeliverDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 0, n)
		e, err := store.GetWebhook(ctx, "evt1")
		require.NoError(t, err)
		require.Equal(t, 1, e.Attempts)
		require.Equal(t, "the endpoint answered HTTP 503", e.LastError)
		require.Equal(t, clock.Now().Add(5*time.Second), e.NextAttemptAt)

		clock.add(5 * time.Second)
		_, err = d.DeliverDue(ctx)
		require.NoError(t, err)
		e, _ = store.GetWebhook(ctx, "evt1")
		require.Equal(t, clock.Now().Add(10*time.Second), e.NextAttemptAt, "exponential backoff")
		clock.add(10 * time.Second)
		_, err = d.DeliverDue(ctx)
		require.NoError(t, err)
		e, _ = store.GetWebhook(ctx, "evt1")
		require.NotNil(t, e.DeliveredAt)
		require.Equal(t, 3, e.Attempts)

		mu.Lock()
		defer mu.Unlock()
		require.Len(t, got, 3)
		for _, h := range got {
			require.Equal(t, "evt1", h.Get("Webhook-Id"))
			require.Equal(t, "t-9", h.Get("X-Webhook-Tenant"))
			require.Equal(t, "application/json", h.Get("Content-Type"))
		}
	})
}

func TestWebhookGivesUpAfterTheRetryWindow(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		accounts := persistence.NewAccounts(db)
		acct := &domain.Account{ID: "a1", Name: "a1", Type: domain.AccountLabelFirst, Created: t0, Updated: t0}
		acct.WebhookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
		require.NoError(t, accounts.CreateAccount(ctx, acct))
		store := persistence.NewWebhooks(db)
		clock := &fixedClock{t: persistence.StoredTime(t0)}
		require.NoError(t, store.EnqueueWebhook(ctx, &domain.WebhookEvent{
			ID: "evt1", AccountID: "a1", URL: "http://127.0.0.1:1/unreachable", Type: "job.failed",
			SubjectKind: "job", SubjectID: "j", Created: clock.Now(),
		}))
		d := &webhooks.Deliverer{
			Store: store, Payloads: staticPayloads{}, Accounts: accounts, Clock: clock,
			Poster: safehttp.New(safehttp.Config{AllowPrivate: true}),
			Log:    slog.New(slog.NewTextHandler(io.Discard, nil)), Owner: "w1",
		}
		for i := 0; i < 100; i++ {
			_, err := d.DeliverDue(ctx)
			require.NoError(t, err)
			e, err := store.GetWebhook(ctx, "evt1")
			require.NoError(t, err)
			if e.FailedAt != nil {
				require.LessOrEqual(t, e.FailedAt.Sub(e.Created), domain.WebhookRetryWindow+time.Hour)
				require.Greater(t, e.FailedAt.Sub(e.Created), 20*time.Hour)
				return
			}
			clock.t = e.NextAttemptAt
		}
		t.Fatal("never gave up")
	})
}
