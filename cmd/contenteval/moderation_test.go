package main

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// moderationPolicyText has sections named as two of OpenAI's categories,
// so the SDKs' typed fields carry real verdicts, and one of our own that
// flags an image by its md5.
func moderationPolicyText(img []byte) string {
	sum := md5.Sum(img)
	return fmt.Sprintf(`LABEL "violence": "threats" {
    =("kill you")
}
LABEL "harassment": "insults" {
    =("idiot")
}
LABEL "Known": "a known image" {
    HASH("md5:%s")
}
`, hex.EncodeToString(sum[:]))
}

// moderationFixture is a server with a policy-first account whose policy
// "mod" has moderationPolicyText, an image served over http, and an
// account limited to one request a second.
type moderationFixture struct {
	env      *testEnv
	img      []byte
	imageURL string
	limited  testAccount
	// stopClock stops the goroutine that moves the server's clock with
	// real time (the rate limiter's bucket refills on it).
	stopClock func()
}

func newModerationFixture(t *testing.T, env *testEnv) *moderationFixture {
	t.Helper()
	f := &moderationFixture{env: env, img: testPNG(t, "MODERATE ME")}
	f.createPolicy(t, env.PolicyFirst.Token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(f.img) }))
	t.Cleanup(srv.Close)
	f.imageURL = srv.URL + "/image.png"
	f.limited = env.newAccount("limited", domain.AccountPolicyFirst)
	f.createPolicy(t, f.limited.Token)
	_, err := env.Main.Accounts.UpdateAccount(context.Background(), f.limited.ID, func(a *domain.Account) error {
		a.Limits.RequestsPerSecond, a.Limits.Burst = 1, 1
		return nil
	})
	require.NoError(t, err)
	stop := make(chan struct{})
	var once sync.Once
	f.stopClock = func() { once.Do(func() { close(stop) }) }
	t.Cleanup(f.stopClock)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				env.Clock.Add(10 * time.Millisecond)
			}
		}
	}()
	return f
}

// createPolicy creates the policy "mod" for the key's account.
func (f *moderationFixture) createPolicy(t *testing.T, token string) {
	t.Helper()
	r := f.env.call(http.MethodPost, "/v1/policies", token, mustJSON(t, map[string]any{"policyKey": "mod", "text": moderationPolicyText(f.img)}))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
}

// setDefaults runs accounts set ID --moderation-policy/--moderation-tag
// on the server's database.
func (f *moderationFixture) setDefaults(t *testing.T, accountID string, s accountSettings, flags ...string) {
	t.Helper()
	given := map[string]bool{}
	for _, fl := range flags {
		given[fl] = true
	}
	require.NoError(t, setAccount(context.Background(), f.env.Main, &printer{w: io.Discard}, []string{accountID}, given, s))
}

// openAIClient is the official Go SDK pointed at the server.
func openAIClient(env *testEnv, token string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(env.URL + "/v1/"), option.WithAPIKey(token), option.WithMaxRetries(2),
	}, opts...)...)
}

// requireOpenAIError wants err to be the SDK's API error with this status
// and code.
func requireOpenAIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "want *openai.Error, got %v", err)
	require.Equal(t, status, apiErr.StatusCode, "%s", apiErr.RawJSON())
	require.Equal(t, code, apiErr.Code, "%s", apiErr.RawJSON())
	require.NotEmpty(t, apiErr.Message)
}

// openAIErrorOf decodes OpenAI's error body; every member is present
// (param and code may be null).
func openAIErrorOf(t *testing.T, r rawResponse) map[string]any {
	t.Helper()
	var body struct {
		Error map[string]any `json:"error"`
	}
	require.NoError(t, jsonUnmarshal(r.Body, &body), "%s", r.Body)
	require.NotNil(t, body.Error, "%s", r.Body)
	for _, k := range []string{"message", "type", "param", "code"} {
		require.Contains(t, body.Error, k, "%s", r.Body)
	}
	require.NotEmpty(t, body.Error["message"])
	return body.Error
}

// TestModerationErrorsInOpenAIShape: every error of the endpoint, from the
// request validator and authentication as much as the handler, is OpenAI's
// body with the status the SDKs map; other paths keep the Status body.
func TestModerationErrorsInOpenAIShape(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		f := newModerationFixture(t, env)
		f.stopClock()
		tok := env.PolicyFirst.Token
		_, reviewer, err := env.Main.Keys.IssueRole(ctx, env.PolicyFirst.ID, "reviewer", domain.RoleReviewer, 0)
		require.NoError(t, err)
		blocked := testPNG(t, "KNOWN BAD")
		sum := md5.Sum(blocked)
		_, err = env.Main.Precheck.Import(ctx, "known", "md5", strings.NewReader(hex.EncodeToString(sum[:])+"\n"))
		require.NoError(t, err)
		require.NoError(t, env.Main.Precheck.Reload(ctx))
		many := make([]string, 101)
		for i := range many {
			many[i] = "x"
		}
		str := func(s string) *string { return &s }
		for _, tc := range []struct {
			name, method, token, body string
			status                    int
			typ                       string
			param, code               *string
		}{
			{"no key", http.MethodPost, "", `{"input":"hi","model":"mod"}`, 401, "authentication_error", nil, str("invalid_api_key")},
			{"bad key", http.MethodPost, "nope", `{"input":"hi","model":"mod"}`, 401, "authentication_error", nil, str("invalid_api_key")},
			{"reviewer key", http.MethodPost, reviewer, `{"input":"hi","model":"mod"}`, 403, "permission_error", nil, str("permission_denied")},
			{"malformed JSON", http.MethodPost, tok, `{"input":`, 400, "invalid_request_error", str("body"), nil},
			{"no input", http.MethodPost, tok, `{"model":"mod"}`, 400, "invalid_request_error", nil, nil},
			{"input a number", http.MethodPost, tok, `{"input":5,"model":"mod"}`, 400, "invalid_request_error", nil, nil},
			{"too many inputs", http.MethodPost, tok, mustJSON(t, map[string]any{"input": many, "model": "mod"}), 400, "invalid_request_error", nil, nil},
			{"empty input", http.MethodPost, tok, `{"input":[],"model":"mod"}`, 400, "invalid_request_error", nil, nil},
			{"image part without image_url", http.MethodPost, tok, `{"input":[{"type":"image_url"}],"model":"mod"}`, 400, "invalid_request_error", str("input[0].image_url"), nil},
			{"text part without text", http.MethodPost, tok, `{"input":[{"type":"text"}],"model":"mod"}`, 400, "invalid_request_error", str("input[0].text"), nil},
			{"ftp image", http.MethodPost, tok, `{"input":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}],"model":"mod"}`, 400, "invalid_request_error", str("input[0].image_url.url"), nil},
			{"bad data URL", http.MethodPost, tok, `{"input":[{"type":"image_url","image_url":{"url":"data:image/png;base64,%%%"}}],"model":"mod"}`, 400, "invalid_request_error", str("input[0].image_url.url"), nil},
			{"not an image", http.MethodPost, tok, `{"input":[{"type":"image_url","image_url":{"url":"data:image/png;base64,aGVsbG8="}}],"model":"mod"}`, 400, "invalid_request_error", nil, nil},
			{"text too long", http.MethodPost, tok, mustJSON(t, map[string]any{"input": strings.Repeat("a", 300<<10), "model": "mod"}), 400, "invalid_request_error", nil, nil},
			{"blocked image", http.MethodPost, tok, mustJSON(t, map[string]any{"model": "mod", "input": []map[string]any{{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(blocked)}}}}), 400, "invalid_request_error", nil, str("content_blocked")},
			{"unknown model", http.MethodPost, tok, `{"input":"hi","model":"nope"}`, 404, "invalid_request_error", str("model"), str("model_not_found")},
			{"OpenAI model without default", http.MethodPost, tok, `{"input":"hi","model":"omni-moderation-latest"}`, 404, "invalid_request_error", str("model"), str("model_not_found")},
			{"no model without default", http.MethodPost, tok, `{"input":"hi"}`, 404, "invalid_request_error", str("model"), str("model_not_found")},
			{"label model on a policy-first account", http.MethodPost, tok, `{"input":"hi","model":"label:x"}`, 404, "invalid_request_error", str("model"), str("model_not_found")},
			{"policy key on a label-first account", http.MethodPost, env.LabelFirst.Token, `{"input":"hi","model":"mod"}`, 404, "invalid_request_error", str("model"), str("model_not_found")},
			{"GET", http.MethodGet, tok, "", 405, "invalid_request_error", nil, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ct := ""
				if tc.body != "" {
					ct = "application/json"
				}
				r := env.do(tc.method, "/v1/moderations", tc.token, ct, tc.body)
				require.Equal(t, tc.status, r.Status, "%s", r.Body)
				if tc.method == http.MethodPost {
					requireMatchesSpec(t, r)
				}
				e := openAIErrorOf(t, r)
				require.Equal(t, tc.typ, e["type"], "%s", r.Body)
				if tc.param != nil {
					require.Equal(t, *tc.param, e["param"], "%s", r.Body)
				}
				if tc.code != nil {
					require.Equal(t, *tc.code, e["code"], "%s", r.Body)
				}
			})
		}
		// The rate limit: 429 with Retry-After, in OpenAI's shape.
		var r rawResponse
		for range 3 {
			if r = env.do(http.MethodPost, "/v1/moderations", f.limited.Token, "application/json", `{"input":"hi","model":"mod"}`); r.Status == 429 {
				break
			}
		}
		require.Equal(t, 429, r.Status, "%s", r.Body)
		require.Equal(t, "1", r.Header.Get("Retry-After"))
		e := openAIErrorOf(t, r)
		require.Equal(t, "rate_limit_error", e["type"])
		require.Equal(t, "rate_limit_exceeded", e["code"])

		// Other paths keep the Status body.
		s := statusOf(t, env.do(http.MethodPost, "/v1/jobs", "", "application/json", `{}`))
		require.EqualValues(t, domain.Unauthenticated, s.Code)
	})
}

// TestModerationLabelFirst: label:<name>, tag:<name>, and OpenAI's names
// through the account's default tag.
func TestModerationLabelFirst(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		f := newModerationFixture(t, env)
		tok := env.LabelFirst.Token
		tag := env.createTag(tok, "guard")
		for name, rule := range map[string]string{"violence": `=("kill you")`, "harassment": `=("idiot")`} {
			l := env.createLabel(tok, map[string]any{"name": name, "tagIds": []string{tag.LabelTagId}})
			env.createVersion(tok, l.LabelId, map[string]any{"text": `=("never matches")`})
			env.createVersion(tok, l.LabelId, map[string]any{"text": rule})
		}
		solo := env.createLabel(tok, map[string]any{"name": "Solo"})
		env.createVersion(tok, solo.LabelId, map[string]any{"text": `=("kill you")`})
		empty := env.createLabel(tok, map[string]any{"name": "Empty"})
		_ = empty
		c := openAIClient(env, tok)
		ctx := context.Background()
		moderate := func(model, text string) (*openai.ModerationNewResponse, error) {
			return c.Moderations.New(ctx, openai.ModerationNewParams{Model: model, Input: openai.ModerationNewParamsInputUnion{OfString: openai.String(text)}})
		}

		// label:<name> evaluates that label's latest version only.
		res, err := moderate("label:violence", "I will kill you, idiot")
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(res.ID, "modr-"))
		require.True(t, res.Results[0].Categories.Violence)
		require.False(t, res.Results[0].Categories.Harassment)
		res, err = moderate("label:Solo", "I will kill you")
		require.NoError(t, err)
		require.True(t, res.Results[0].Flagged)
		require.Equal(t, "true", res.Results[0].Categories.JSON.ExtraFields["Solo"].Raw())

		// tag:<name> evaluates every label with the tag.
		res, err = moderate("tag:guard", "I will kill you, idiot")
		require.NoError(t, err)
		require.True(t, res.Results[0].Categories.Violence)
		require.True(t, res.Results[0].Categories.Harassment)
		_, hasSolo := res.Results[0].Categories.JSON.ExtraFields["Solo"]
		require.False(t, hasSolo)

		for _, model := range []string{"label:nope", "label:Empty", "tag:nope", "nope", openai.ModerationModelOmniModerationLatest} {
			_, err = moderate(model, "hi")
			requireOpenAIError(t, err, http.StatusNotFound, "model_not_found")
		}
		f.setDefaults(t, env.LabelFirst.ID, accountSettings{moderationTag: "guard"}, "moderation-tag")
		for _, model := range []string{openai.ModerationModelOmniModerationLatest, openai.ModerationModelTextModerationLatest} {
			res, err = moderate(model, "you idiot")
			require.NoError(t, err)
			require.Equal(t, model, res.Model)
			require.True(t, res.Results[0].Categories.Harassment)
			require.False(t, res.Results[0].Categories.Violence)
		}
	})
}

// TestModerationMatchesOpenAISchema validates the endpoint's answers
// against OpenAI's published Moderation response schema
// (testdata/openai-moderation-response.schema.json, written from
// https://platform.openai.com/docs/api-reference/moderations/object and
// https://github.com/openai/openai-openapi, CreateModerationResponse).
func TestModerationMatchesOpenAISchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "openai-moderation-response.schema.json"))
	require.NoError(t, err)
	var schema openapi3.Schema
	require.NoError(t, json.Unmarshal(raw, &schema))
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true }, func(t *testing.T, env *testEnv) {
		f := newModerationFixture(t, env)
		f.stopClock()
		// A section named as an OpenAI category that cannot be evaluated
		// on text fails; OpenAI's schema still requires the category.
		r := env.call(http.MethodPost, "/v1/policies", env.PolicyFirst.Token, mustJSON(t, map[string]any{"policyKey": "failing",
			"text": "LABEL \"sexual\": \"x\" {\n    HASH(\"md5:00000000000000000000000000000000\")\n}\nLABEL \"Mine\": \"x\" {\n    HASH(\"md5:00000000000000000000000000000000\")\n}\n"}))
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(f.img)
		for _, body := range []string{
			`{"model":"mod","input":"I will kill you"}`,
			`{"model":"mod","input":["good morning","you idiot"]}`,
			`{"model":"mod","input":[{"type":"text","text":"I will kill you"},{"type":"image_url","image_url":{"url":"` + dataURL + `"}}]}`,
			`{"model":"mod","input":[{"type":"image_url","image_url":{"url":"` + f.imageURL + `"}}]}`,
			`{"model":"failing","input":"hello"}`,
		} {
			r := env.call(http.MethodPost, "/v1/moderations", env.PolicyFirst.Token, body)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			var v any
			require.NoError(t, json.Unmarshal(r.Body, &v))
			require.NoError(t, schema.VisitJSON(v, openapi3.MultiErrors()), "%s", r.Body)
			if strings.Contains(body, "failing") {
				require.Contains(t, string(r.Body), `"failed_categories":["Mine","sexual"]`)
			}
		}
	})
}

// TestModerationQuota: the daily evaluation quota applies to moderation
// calls as to jobs, and answers OpenAI's insufficient_quota.
func TestModerationQuota(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		f := newModerationFixture(t, env)
		f.stopClock()
		_, err := env.Main.Accounts.UpdateAccount(context.Background(), env.PolicyFirst.ID, func(a *domain.Account) error {
			a.Limits.EvaluationsPerDay = 1
			return nil
		})
		require.NoError(t, err)
		r := env.call(http.MethodPost, "/v1/moderations", env.PolicyFirst.Token, `{"model":"mod","input":"hi"}`)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		r = env.call(http.MethodPost, "/v1/moderations", env.PolicyFirst.Token, `{"model":"mod","input":"hi"}`)
		require.Equal(t, http.StatusTooManyRequests, r.Status, "%s", r.Body)
		e := openAIErrorOf(t, r)
		require.Equal(t, "insufficient_quota", e["type"], "%s", r.Body)
		require.Equal(t, "insufficient_quota", e["code"], "%s", r.Body)
	})
}
