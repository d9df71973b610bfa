package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	"github.com/contenteval/contenteval/persistence"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// call sends a raw request and checks the response against openapi.yaml.
func (e *testEnv) call(method, path, token, body string) rawResponse {
	e.t.Helper()
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	r := e.do(method, path, token, ct, body)
	requireMatchesSpec(e.t, r)
	return r
}

func requireStatus(t *testing.T, r rawResponse, httpStatus int, code domain.Code) map[string]any {
	t.Helper()
	require.Equal(t, httpStatus, r.Status, "body: %s", r.Body)
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), "body: %s", r.Body)
	require.EqualValues(t, code, m["code"], "body: %s", r.Body)
	require.NotEmpty(t, m["message"])
	return m
}

// fieldViolations returns the fields named by the BadRequest detail.
func fieldViolations(t *testing.T, m map[string]any) []string {
	t.Helper()
	var fields []string
	details, _ := m["details"].([]any)
	for _, d := range details {
		d := d.(map[string]any)
		if d["@type"] != "type.googleapis.com/google.rpc.BadRequest" {
			continue
		}
		for _, v := range d["fieldViolations"].([]any) {
			v := v.(map[string]any)
			require.NotEmpty(t, v["description"])
			fields = append(fields, v["field"].(string))
		}
	}
	require.NotEmpty(t, fields, "no BadRequest detail in %v", m)
	return fields
}

func TestAuthentication(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		expiring, expiringToken, err := env.Main.Keys.Issue(ctx, env.LabelFirst.ID, "short", time.Hour)
		require.NoError(t, err)
		require.NotNil(t, expiring.ExpiresAt)
		_, revokedToken, err := env.Main.Keys.Issue(ctx, env.LabelFirst.ID, "revoked", 0)
		require.NoError(t, err)
		claims, _, err := jwt.NewParser().ParseUnverified(revokedToken, &jwt.RegisteredClaims{})
		require.NoError(t, err)
		_, err = env.Main.Keys.Revoke(ctx, claims.Claims.(*jwt.RegisteredClaims).ID)
		require.NoError(t, err)
		_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
		forged, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{
			Issuer: access.TokenIssuer, Subject: env.LabelFirst.ID, ID: expiring.ID,
		}).SignedString(otherKey)
		require.NoError(t, err)

		// The expiring key works now, and not after its expiry.
		r := env.call(http.MethodGet, "/v1/label-tags", expiringToken, "")
		require.NotEqual(t, http.StatusUnauthorized, r.Status)
		env.Clock.Add(2 * time.Hour)

		for _, tc := range []struct{ name, header string }{
			{"none", ""},
			{"not bearer", "Basic dXNlcjpwYXNz"},
			{"empty bearer", "Bearer "},
			{"malformed", "Bearer not.a.jwt"},
			{"expired", "Bearer " + expiringToken},
			{"revoked", "Bearer " + revokedToken},
			{"wrong signature", "Bearer " + forged},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, err := http.NewRequest(http.MethodGet, env.URL+"/v1/labels", nil)
				require.NoError(t, err)
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				resp, err := specClient.Do(req)
				require.NoError(t, err)
				r := readResponse(t, req, resp)
				requireMatchesSpec(t, r)
				requireStatus(t, r, http.StatusUnauthorized, domain.Unauthenticated)
			})
		}
	})
}

func TestAccountTypeGating(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		job := `{"contentData":[{"text":"hi"}],"policyId":"p1"}`
		r := env.call(http.MethodPost, "/v1/jobs", env.LabelFirst.Token, job)
		m := requireStatus(t, r, http.StatusBadRequest, domain.FailedPrecondition)
		require.Contains(t, m["message"], "policy-first")

		r = env.call(http.MethodGet, "/v1/labels", env.PolicyFirst.Token, "")
		m = requireStatus(t, r, http.StatusBadRequest, domain.FailedPrecondition)
		require.Contains(t, m["message"], "label-first")

		// Operations for both account types are open to both.
		for _, tok := range []string{env.LabelFirst.Token, env.PolicyFirst.Token} {
			r = env.call(http.MethodGet, "/v1/jobs", tok, "")
			require.NotEqual(t, http.StatusBadRequest, r.Status, "%s", r.Body)
		}
	})
}

func TestRequestValidation(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		lf, pf := env.LabelFirst.Token, env.PolicyFirst.Token
		for _, tc := range []struct {
			name, method, path, token, body string
			field                           string
		}{
			{"malformed JSON", http.MethodPost, "/v1/labels", lf, `{"name":`, "body"},
			{"missing required", http.MethodPost, "/v1/labels", lf, `{"description":"x"}`, "name"},
			{"wrong type", http.MethodPost, "/v1/labels", lf, `{"name":42}`, "name"},
			{"too many versions", http.MethodPost, "/v1/labels/evaluate", lf,
				`{"contentData":{"text":"x"},"labelVersionIds":["1","2","3","4","5","6","7","8","9","10","11"]}`, "labelVersionIds"},
			{"nested field", http.MethodPost, "/v1/jobs", pf, `{"contentData":[{"text":5}],"policyId":"p"}`, "contentData[0].text"},
			{"bad enum", http.MethodGet, "/v1/jobs?query.status=DONE", pf, "", "query.status"},
			{"negative page size", http.MethodGet, "/v1/jobs/j1/labels?pageSize=-1", pf, "", "pageSize"},
			{"negative page_size alias", http.MethodGet, "/v1/jobs/j1/labels?page_size=-1", pf, "", "pageSize"},
			{"negative labels page_size", http.MethodGet, "/v1/labels?page_size=-5", lf, "", "page_size"},
			{"bad threshold", http.MethodPost, "/v1/jobs", pf, `{"contentData":[{"text":"x"}],"policyId":"p","threshold":2}`, "threshold"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := env.call(tc.method, tc.path, tc.token, tc.body)
				m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
				require.Contains(t, fieldViolations(t, m), tc.field)
			})
		}
	})
}

func TestSnakeCaseAliases(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		// Passing validation with only snake_case names proves the aliases:
		// labelVersionIds and contentData are required.
		r := env.call(http.MethodPost, "/v1/labels/evaluate", env.LabelFirst.Token,
			`{"content_data":{"text":"x","metadata":{"user_id":"u"}},"label_version_ids":["v1"]}`)
		require.NotEqual(t, http.StatusBadRequest, r.Status, "%s", r.Body)
		r = env.call(http.MethodPost, "/v1/jobs", env.PolicyFirst.Token,
			`{"content_data":[{"text":"x"}],"policy_id":"p","wait_for_completion":false}`)
		require.NotEqual(t, http.StatusBadRequest, r.Status, "%s", r.Body)
		r = env.call(http.MethodGet, "/v1/jobs?page_size=5&page_token=", env.PolicyFirst.Token, "")
		require.NotEqual(t, http.StatusBadRequest, r.Status, "%s", r.Body)
	})
}

func TestRoutingErrors(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		r := env.call(http.MethodGet, "/v1/nothing-here", env.LabelFirst.Token, "")
		requireStatus(t, r, http.StatusNotFound, domain.NotFound)
		r = env.call(http.MethodGet, "/nowhere", "", "")
		requireStatus(t, r, http.StatusNotFound, domain.NotFound)

		r = env.do(http.MethodDelete, "/v1/jobs", env.PolicyFirst.Token, "", "")
		requireStatus(t, r, http.StatusMethodNotAllowed, domain.Unimplemented)
		require.Equal(t, "GET, POST", r.Header.Get("Allow"))
	})
}

func TestEveryOperationIsRegistered(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		doc, _ := loadSpec(t)
		for path, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				if op.Tags[0] == "operations" {
					continue
				}
				token := env.LabelFirst.Token
				if op.Extensions["x-account-type"] == "policy-first" {
					token = env.PolicyFirst.Token
				}
				p := strings.NewReplacer("{jobUuid}", "j1", "{labelId}", "l1", "{labelVersionId}", "v1",
					"{policyId}", "p1", "{batchJobId}", "b1").Replace(path)
				r := env.do(method, p, token, "application/json", "{}")
				if r.Status == http.StatusNotFound {
					m := statusOf(t, r)
					require.NotEqual(t, "no such route", m.Message, "%s %s is not registered", method, path)
				}
				require.NotEqual(t, http.StatusMethodNotAllowed, r.Status, "%s %s", method, path)
			}
		}
	})
}

func TestRateLimit(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.RateRPS, c.RateBurst = 1, 3 }, func(t *testing.T, env *testEnv) {
		for i := 0; i < 3; i++ {
			r := env.call(http.MethodGet, "/v1/jobs", env.PolicyFirst.Token, "")
			require.NotEqual(t, http.StatusTooManyRequests, r.Status, "request %d", i)
		}
		r := env.call(http.MethodGet, "/v1/jobs", env.PolicyFirst.Token, "")
		m := requireStatus(t, r, http.StatusTooManyRequests, domain.ResourceExhausted)
		require.NotContains(t, m, "details")
		require.Equal(t, "1", r.Header.Get("Retry-After"))
		// Buckets are per account: another account is not limited.
		r = env.call(http.MethodGet, "/v1/jobs", env.LabelFirst.Token, "")
		require.NotEqual(t, http.StatusTooManyRequests, r.Status)
		// An account's own limits override the server default.
		_, err := env.Main.Accounts.UpdateAccount(context.Background(), env.LabelFirst.ID, func(a *domain.Account) error {
			a.Limits.RequestsPerSecond, a.Limits.Burst = 1, 1
			return nil
		})
		require.NoError(t, err)
		env.Main.Keys.ForgetAccount(env.LabelFirst.ID)
		require.NotEqual(t, http.StatusTooManyRequests, env.call(http.MethodGet, "/v1/jobs", env.LabelFirst.Token, "").Status)
		require.Equal(t, http.StatusTooManyRequests, env.call(http.MethodGet, "/v1/jobs", env.LabelFirst.Token, "").Status)
	})
}

func TestBodyLimit(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.BodyLimit = 4096 }, func(t *testing.T, env *testEnv) {
		big := `{"name":"` + strings.Repeat("a", 8000) + `"}`
		r := env.call(http.MethodPost, "/v1/labels", env.LabelFirst.Token, big)
		m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "body")
	})
}

func TestOperationalEndpoints(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		for _, p := range []string{"/healthz", "/readyz", "/openapi.yaml", "/docs", "/docs/redoc.standalone.js"} {
			r := env.do(http.MethodGet, p, "", "", "")
			require.Equal(t, http.StatusOK, r.Status, p)
		}
		r := env.do(http.MethodGet, "/openapi.yaml", "", "", "")
		require.True(t, strings.HasPrefix(string(r.Body), "openapi: 3.0.3"))
		env.call(http.MethodGet, "/v1/labels", "", "")
		r = env.do(http.MethodGet, "/metrics", "", "", "")
		require.Contains(t, string(r.Body), `contenteval_http_requests_total{code="401",operation="listLabels"}`)
		require.Contains(t, string(r.Body), `contenteval_http_request_duration_seconds_bucket{operation="listLabels"`)
		require.Contains(t, string(r.Body), "go_goroutines")
	})
}

func TestNotReadyWithoutDatabase(t *testing.T) {
	db, err := persistence.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	require.NoError(t, err)
	require.NoError(t, db.Migrate(context.Background()))
	env := startServerOn(t, "sqlite", db, nil)
	require.Equal(t, http.StatusOK, env.do(http.MethodGet, "/readyz", "", "", "").Status)
	require.NoError(t, db.Close())
	r := env.do(http.MethodGet, "/readyz", "", "", "")
	requireStatus(t, r, http.StatusServiceUnavailable, domain.Unavailable)
}

func readResponse(t *testing.T, req *http.Request, resp *http.Response) rawResponse {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	_, err := ioCopy(&b, resp.Body)
	require.NoError(t, err)
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: []byte(b.String()), Req: req}
}
