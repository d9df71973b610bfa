package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

// TestHostileTextIsInvalidArgument sends NUL and invalid UTF-8 in every kind
// of text the API stores or looks up: body strings, path ids and query
// values. PostgreSQL refuses both in text columns, so without the input guard
// they were 500s there (and 200/404 on SQLite); the input guard makes them
// INVALID_ARGUMENT naming the field on every backend.
func TestHostileTextIsInvalidArgument(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		lf, pf := env.LabelFirst.Token, env.PolicyFirst.Token
		label := env.createLabel(lf, map[string]any{"name": "Target"})
		version := env.createVersion(lf, label.LabelId, map[string]any{"text": `=("x")`})
		policy := decodeAs[struct {
			Policy struct{ PolicyId string }
		}](t, env.call(http.MethodPost, "/v1/policies", pf, mustJSON(t, map[string]any{"policyKey": "main", "text": testPolicyText}))).Policy.PolicyId
		job := *(env.evaluate(lf, map[string]any{"contentData": map[string]any{"text": "hello"},
			"labelVersionIds": []string{version.LabelVersionId}}).Results)[0].JobUuid

		// %[1]s is the bad text as it appears in a JSON string; %[2]d makes
		// names unique, so a case that wrongly succeeds cannot make the next
		// one a conflict.
		bodies := []struct {
			name, method, path, token, body, field string
		}{
			{"label name", http.MethodPost, "/v1/labels", lf, `{"name":"a%[1]sb"}`, "name"},
			{"label description", http.MethodPost, "/v1/labels", lf, `{"name":"d%[2]d","description":"a%[1]sb"}`, "description"},
			{"label update", http.MethodPatch, "/v1/labels/" + label.LabelId, lf, `{"description":"a%[1]sb"}`, "description"},
			{"label version text", http.MethodPost, "/v1/labels/" + label.LabelId + "/versions", lf, `{"text":"=(\"a%[1]sb\")"}`, "text"},
			{"label tag name", http.MethodPost, "/v1/label-tags", lf, `{"name":"a%[1]sb"}`, "name"},
			{"policy key", http.MethodPost, "/v1/policies", pf, `{"policyKey":"a%[1]sb","text":"LABEL \"A\": \"remove\" {\n =(\"a\")\n}"}`, "policyKey"},
			{"policy text", http.MethodPost, "/v1/policies/" + policy + "/versions", pf, `{"text":"LABEL \"A\": \"remove\" {\n =(\"a%[1]sb\")\n}"}`, "text"},
			{"feedback comment", http.MethodPost, "/v1/jobs/" + job + "/feedback", lf, `{"expectedOutcome":"EVALUATION_RESULT_TRUE","comment":"a%[1]sb"}`, "comment"},
			{"job text", http.MethodPost, "/v1/jobs", pf, `{"policyId":"` + policy + `","contentData":[{"text":"ok"},{"text":"a%[1]sb"}],"waitForCompletion":true}`, "contentData[1].text"},
			{"job text snake", http.MethodPost, "/v1/jobs", pf, `{"policy_id":"` + policy + `","content_data":[{"text":"a%[1]sb"}]}`, "contentData[0].text"},
			{"job metadata", http.MethodPost, "/v1/jobs", pf, `{"policyId":"` + policy + `","contentData":[{"text":"x","metadata":{"k_1":"a%[1]sb"}}]}`, "contentData[0].metadata.k_1"},
			{"job metadata key", http.MethodPost, "/v1/jobs", pf, `{"policyId":"` + policy + `","contentData":[{"text":"x","metadata":{"a%[1]sb":"v"}}]}`, "contentData[0].metadata"},
			{"evaluate text", http.MethodPost, "/v1/labels/evaluate", lf, `{"contentData":{"text":"a%[1]sb"},"labelVersionIds":["` + version.LabelVersionId + `"]}`, "contentData.text"},
			{"evaluate version id", http.MethodPost, "/v1/labels/evaluate", lf, `{"contentData":{"text":"x"},"labelVersionIds":["a%[1]sb"]}`, "labelVersionIds[0]"},
		}
		urls := []struct {
			name, method, path, token, field string
		}{
			{"job id", http.MethodGet, "/v1/jobs/a%sb", pf, "jobUuid"},
			{"job labels id", http.MethodGet, "/v1/jobs/a%sb/labels", lf, "jobUuid"},
			{"label id", http.MethodGet, "/v1/labels/a%sb", lf, "labelId"},
			// An escaped slash makes Go keep the raw path, which Echo routes on.
			{"label id beside an escaped slash", http.MethodGet, "/v1/labels/a%%2F%sb", lf, "labelId"},
			{"label version id", http.MethodGet, "/v1/labels/" + label.LabelId + "/versions/a%sb", lf, "labelVersionId"},
			{"policy id", http.MethodGet, "/v1/policies/a%sb", pf, "policyId"},
			{"batch job id", http.MethodPost, "/v1/batch-jobs/a%sb/cancel", pf, "batchJobId"},
			{"page token", http.MethodGet, "/v1/jobs?pageToken=a%sb", pf, "pageToken"},
			{"page token alias", http.MethodGet, "/v1/jobs?page_token=a%sb", pf, "pageToken"},
			{"labels page_token", http.MethodGet, "/v1/labels?page_token=a%sb", lf, "page_token"},
			{"query policy id", http.MethodGet, "/v1/jobs?query.policyId=a%sb", pf, "query.policyId"},
			{"feedback page token", http.MethodGet, "/v1/jobs/" + job + "/feedback?pageToken=a%sb", lf, "page_token"},
		}
		n := 0
		for _, bad := range []struct{ name, json, url string }{
			{"NUL", `\u0000`, "%00"},
			{"invalid UTF-8", "\xff", "%FF"},
		} {
			for _, tc := range bodies {
				t.Run(bad.name+"/"+tc.name, func(t *testing.T) {
					n++
					r := env.call(tc.method, tc.path, tc.token, fmt.Sprintf(tc.body, bad.json, n))
					m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
					require.Contains(t, fieldViolations(t, m), tc.field)
				})
			}
			for _, tc := range urls {
				t.Run(bad.name+"/"+tc.name, func(t *testing.T) {
					body := ""
					if tc.method == http.MethodPost {
						body = "{}"
					}
					r := env.call(tc.method, fmt.Sprintf(tc.path, bad.url), tc.token, body)
					m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
					require.Contains(t, fieldViolations(t, m), tc.field)
				})
			}
		}

		// Valid non-ASCII text, escaped or not, still passes.
		for _, name := range []string{"caf\u00e9 \u2603", `caf\u00e9 \ud83d\ude00`} {
			r := env.call(http.MethodPost, "/v1/label-tags", lf, `{"name":"`+name+`"}`)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		}
		r := env.call(http.MethodGet, "/v1/labels/"+strings.ReplaceAll("caf\u00e9", "\u00e9", "%C3%A9"), lf, "")
		requireStatus(t, r, http.StatusNotFound, domain.NotFound)
	})
}

// TestJSONBodyBounds: the shape bounds of docs/api.md#limits and the per-operation
// body limits, through the real server. Each would be served (200) or decoded
// whole without the input guard.
func TestJSONBodyBounds(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		lf, pf := env.LabelFirst.Token, env.PolicyFirst.Token
		nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
		values := func(n int) string { return strings.TrimSuffix(strings.Repeat("0,", n), ",") }
		for _, tc := range []struct {
			name, path, token, body, field string
		}{
			{"nesting 65", "/v1/label-tags", lf, `{"name":"a","x":` + nest(65) + `}`, "x" + strings.Repeat("[0]", 63)},
			{"nesting 65 in a job", "/v1/jobs", pf, `{"policyId":"p","contentData":[{"text":"a","metadata":{"k":` + nest(61) + `}}]}`, "contentData[0].metadata.k" + strings.Repeat("[0]", 60)},
			{"10,001 values without content", "/v1/label-tags", lf, `{"name":"a","x":[` + values(9_998) + `]}`, "x[9997]"},
			{"100,001 values in a job", "/v1/jobs", pf, `{"policyId":"p","contentData":[{"text":"a"}],"x":[` + values(99_995) + `]}`, "x[99994]"},
			{"2 MiB label tag", "/v1/label-tags", lf, `{"name":"a","x":"` + strings.Repeat("a", 2<<20) + `"}`, "body"},
			{"malformed past a valid prefix", "/v1/labels", lf, `{"name":"a"}]`, "body"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := env.call(http.MethodPost, tc.path, tc.token, tc.body)
				m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
				require.Equal(t, []string{tc.field}, fieldViolations(t, m))
			})
		}
		// At the bounds, and a large body where content may be large.
		for _, tc := range []struct{ name, path, token, body string }{
			{"nesting 64", "/v1/label-tags", lf, `{"name":"n64","x":` + nest(63) + `}`},
			{"10,000 values", "/v1/label-tags", lf, `{"name":"v10k","x":[` + values(9_997) + `]}`},
			{"2 MiB job", "/v1/jobs", pf, `{"policyId":"p","contentData":[{"text":"a"}],"x":"` + strings.Repeat("a", 2<<20) + `"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := env.call(http.MethodPost, tc.path, tc.token, tc.body)
				if tc.path == "/v1/jobs" {
					// Past the guard: the policy "p" does not exist.
					requireStatus(t, r, http.StatusNotFound, domain.NotFound)
					return
				}
				require.Equal(t, http.StatusOK, r.Status, "%.300s", r.Body)
			})
		}
	})
}
