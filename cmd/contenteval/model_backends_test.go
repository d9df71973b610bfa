package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// modelPolicyText has one label per kind of model signal and one built-in
// label, so a backend failure can be seen to fail only what needs it.
const modelPolicyText = `LABEL "Threat" {
    "threat of violence"
}
LABEL "Scam" {
    QUESTION("Is it a scam?")
}
LABEL "Weapon" {
    "weapon" [AGAINST] "a person"
}
LABEL "Greeting" {
    =("hello")
}
`

// guardDecides: the content meets a criterion when it holds the criterion's
// last word (the fake reads the Llama Guard category the prompt names).
func guardDecides(criterion, content string) float64 {
	f := strings.Fields(strings.ToLower(strings.Trim(criterion, ".?\"")))
	if len(f) > 0 && strings.Contains(strings.ToLower(content), strings.Trim(f[len(f)-1], ".?\"")) {
		return 0.9
	}
	return 0.1
}

// withModelBackends writes a backends file: "guard" (the default, Llama
// Guard on a vLLM fake), "dead" (hangs up) and "fallback" (dead,
// onFailure builtin).
func withModelBackends(t *testing.T, fake *modelbackendtest.Server) func(*Config) {
	dead := modelbackendtest.HangUp(t)
	file := filepath.Join(t.TempDir(), "backends.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, `default: guard
backends:
  - name: guard
    url: %s
    model: llama-guard-3-8b
    profile: llama-guard
  - name: dead
    url: %s
    model: gone-1
    profile: generic
    retries: 0
  - name: fallback
    url: %s
    model: gone-2
    profile: generic
    retries: 0
    onFailure: builtin
`, fake.BaseURL(), dead, dead), 0o600))
	return func(c *Config) {
		batchConfig(c)
		c.BackendsFile = file
	}
}

// sectionsOf returns a report's sections by name.
// withFakeModel runs fn on each database backend with its own fake model
// server and a server configured with withModelBackends.
func withFakeModel(t *testing.T, fn func(t *testing.T, env *testEnv, fake *modelbackendtest.Server)) {
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fake := modelbackendtest.New(modelbackendtest.VLLM, guardDecides)
			t.Cleanup(fake.Close)
			fn(t, startServer(t, b, withModelBackends(t, fake)), fake)
		})
	}
}

func sectionsOf(t *testing.T, report any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, s := range report.(map[string]any)["sectionEvaluationReports"].([]any) {
		sec := s.(map[string]any)
		out[sec["name"].(string)] = sec
	}
	return out
}

func firstAssertion(sec map[string]any) map[string]any {
	return sec["assertionEvaluationReports"].([]any)[0].(map[string]any)
}

// syncJob posts a job with waitForCompletion and returns its "job", failing
// with the response body when the call did not answer 200.
func syncJob(t *testing.T, env *testEnv, token string, req map[string]any) map[string]any {
	t.Helper()
	r := env.call(http.MethodPost, "/v1/jobs", token, mustJSON(t, req))
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	return jsonMap(t, r.Body)["job"].(map[string]any)
}

func jsonMap(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m), "%s", body)
	return m
}

// requireScoredByModel checks a report of content meeting the three model
// criteria: each model label TRUE at the fake's 0.9, its message naming the
// model and the logprob reading; tokens are the fake's 120 per call.
func requireScoredByModel(t *testing.T, report any, calls int) {
	t.Helper()
	secs := sectionsOf(t, report)
	for _, name := range []string{"Threat", "Scam", "Weapon"} {
		a := firstAssertion(secs[name])
		require.Equal(t, "OUTCOME_TRUE", secs[name]["result"], name)
		require.InDelta(t, 0.9, a["score"], 1e-6, name)
		require.True(t, strings.HasSuffix(a["message"].(string), "(model llama-guard-3-8b, logprob)"), "%s: %q", name, a["message"])
	}
	require.Equal(t, "OUTCOME_FALSE", secs["Greeting"]["result"])
	usage := report.(map[string]any)["tokenUsage"].(map[string]any)
	require.EqualValues(t, fmt.Sprint(120*calls), fmt.Sprint(usage["inputTokens"]), "tokenUsage %v", usage)
}

// requireCachedRepeat submits text, evaluated by the model backend
// before (3 calls), again: the cache answers, no call is made and no token
// billed.
func requireCachedRepeat(t *testing.T, env *testEnv, fake *modelbackendtest.Server, policyID, text string) {
	t.Helper()
	job := syncJob(t, env, env.PolicyFirst.Token, map[string]any{
		"policyId": policyID, "waitForCompletion": true, "contentData": []any{map[string]any{"text": text}},
	})
	require.EqualValues(t, 3, fake.Calls(), "a repeat is served from the cache")
	report := job["results"].([]any)[0].(map[string]any)["report"]
	require.Equal(t, "OUTCOME_TRUE", sectionsOf(t, report)["Threat"]["result"])
	require.EqualValues(t, "0", fmt.Sprint(report.(map[string]any)["tokenUsage"].(map[string]any)["inputTokens"]))
}

func TestModelBackendsEndToEnd(t *testing.T) {
	const meets = "a threat of violence, a scam, a weapon against a person"
	withFakeModel(t, func(t *testing.T, env *testEnv, fake *modelbackendtest.Server) {
		tok := env.PolicyFirst.Token
		r, err := env.Client(tok).CreatePolicyWithResponse(t.Context(), client.CreatePolicyRequest{PolicyKey: "model", Text: modelPolicyText})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		policyID := r.JSON200.Policy.PolicyId

		// Sync: three model signals, one call each (Llama Guard judges one
		// category per call).
		job := syncJob(t, env, tok, map[string]any{
			"policyId": policyID, "waitForCompletion": true, "contentData": []any{map[string]any{"text": meets}},
		})
		requireScoredByModel(t, job["results"].([]any)[0].(map[string]any)["report"], 3)
		require.EqualValues(t, 3, fake.Calls())

		// A cached repeat makes no backend call, and bills no tokens.
		requireCachedRepeat(t, env, fake, policyID, meets)

		// Async, with other content: the worker asks the backend.
		const async = "another threat of violence, a scam, a weapon against a person"
		created := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, ContentData: []client.ContentData{textItem(async, nil)}})
		done := env.waitForJob(tok, created.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, done.Status)
		raw := env.call(http.MethodGet, "/v1/jobs/"+created.JobUuid, tok, "")
		requireScoredByModel(t, jsonMap(t, raw.Body)["job"].(map[string]any)["results"].([]any)[0].(map[string]any)["report"], 3)
		require.EqualValues(t, 6, fake.Calls())

		// The stream.
		resp, rd := env.stream(tok, mustJSON(t, map[string]any{"policyId": policyID, "contentData": []any{map[string]any{"text": "stream: " + meets}}}))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		line, err := rd.ReadBytes('\n')
		require.NoError(t, err)
		requireScoredByModel(t, jsonMap(t, line)["result"].(map[string]any)["policyEvaluationReport"], 3)

		// A dead backend fails the sections that need it and nothing else.
		job = syncJob(t, env, tok, map[string]any{
			"policyId": policyID, "waitForCompletion": true, "options": map[string]any{"options": map[string]string{"stack": "dead"}},
			"contentData": []any{map[string]any{"text": "hello " + meets}},
		})
		secs := sectionsOf(t, job["results"].([]any)[0].(map[string]any)["report"])
		for _, name := range []string{"Threat", "Scam", "Weapon"} {
			require.Equal(t, "OUTCOME_FAILED", secs[name]["result"], name)
			require.Contains(t, firstAssertion(secs[name])["message"], "(model gone-1 failed: unreachable)")
		}
		require.Equal(t, "OUTCOME_TRUE", secs["Greeting"]["result"], "the built-in label does not depend on the backend")

		// onFailure builtin: the lexical concept, and the report says so; a
		// question has no built-in answer and still fails.
		job = syncJob(t, env, tok, map[string]any{
			"policyId": policyID, "waitForCompletion": true, "options": map[string]any{"options": map[string]string{"stack": "fallback"}},
			"contentData": []any{map[string]any{"text": "a threat of violence"}},
		})
		secs = sectionsOf(t, job["results"].([]any)[0].(map[string]any)["report"])
		require.Equal(t, "OUTCOME_TRUE", secs["Threat"]["result"])
		require.Contains(t, firstAssertion(secs["Threat"])["message"], "(builtin fallback: model gone-2 failed: unreachable)")
		require.Equal(t, "OUTCOME_FAILED", secs["Scam"]["result"])

		// "builtin" asks no model: the concept is lexical, the question fails.
		calls := fake.Calls()
		job = syncJob(t, env, tok, map[string]any{
			"policyId": policyID, "waitForCompletion": true, "options": map[string]any{"options": map[string]string{"stack": "builtin"}},
			"contentData": []any{map[string]any{"text": "builtin: " + meets}},
		})
		secs = sectionsOf(t, job["results"].([]any)[0].(map[string]any)["report"])
		require.Contains(t, firstAssertion(secs["Threat"])["message"], "(lexical match)")
		require.Equal(t, calls, fake.Calls())

		// /metrics shows the backends' calls, errors, cache hits and tokens.
		resp, err = http.Get(env.URL + "/metrics")
		require.NoError(t, err)
		metrics, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		for _, want := range []string{
			`contenteval_model_backend_calls_total{backend="guard",result="ok"} 9`,
			`contenteval_model_backend_errors_total{backend="dead",reason="unreachable"} 1`,
			`contenteval_model_backend_cache_hits_total{backend="guard"} 3`,
			`contenteval_model_backend_tokens_total{backend="guard",kind="input"} 1080`,
			`contenteval_model_backend_call_seconds_count{backend="guard"} 9`,
		} {
			require.Contains(t, string(metrics), want)
		}

		// An unknown stack is refused when the job is created, naming the field.
		bad := env.call(http.MethodPost, "/v1/jobs", tok, mustJSON(t, map[string]any{
			"policyId": policyID, "options": map[string]any{"options": map[string]string{"stack": "gpt-9"}},
			"contentData": []any{map[string]any{"text": "x"}},
		}))
		st := requireStatus(t, bad, http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, st["message"], "options.options.stack")
		require.Contains(t, st["message"], "guard")
	})
}

func TestModelBackendsLabelsAndBatches(t *testing.T) {
	withFakeModel(t, func(t *testing.T, env *testEnv, fake *modelbackendtest.Server) {

		// Label-first: a version names its stack; an unknown one is refused.
		ltok := env.LabelFirst.Token
		label := env.createLabel(ltok, map[string]any{"name": "Threat"})
		bad := env.call(http.MethodPost, "/v1/labels/"+label.LabelId+"/versions", ltok, mustJSON(t, map[string]any{
			"text": `"threat of violence"`, "labelEvalOptions": map[string]any{"stack": "nope"},
		}))
		st := requireStatus(t, bad, http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, st["message"], "labelEvalOptions.stack")
		v := env.createVersion(ltok, label.LabelId, map[string]any{
			"text": `"threat of violence"`, "labelEvalOptions": map[string]any{"stack": "guard"}, "globalContext": "a gaming forum",
		})
		out := jsonMap(t, env.call(http.MethodPost, "/v1/labels/evaluate", ltok, mustJSON(t, map[string]any{
			"contentData": map[string]any{"text": "that is violence"}, "labelVersionIds": []string{v.LabelVersionId},
		})).Body)
		res := out["results"].([]any)[0].(map[string]any)["evaluation"].(map[string]any)
		require.Equal(t, "OUTCOME_TRUE", res["outcome"], "%v", res)
		require.InDelta(t, 0.9, res["score"], 1e-6)
		require.Contains(t, fmt.Sprint(res["report"]), "(model llama-guard-3-8b, logprob)")
		require.Contains(t, fake.Requests()[0]["prompt"], "a gaming forum", "the global context is in the prompt")
		// The call's own options: a dead stack fails the label.
		out = jsonMap(t, env.call(http.MethodPost, "/v1/labels/evaluate", ltok, mustJSON(t, map[string]any{
			"contentData": map[string]any{"text": "that is violence"}, "labelVersionIds": []string{v.LabelVersionId},
			"labelEvalOptions": map[string]any{"stack": "dead"},
		})).Body)
		require.Equal(t, "OUTCOME_FAILED", out["results"].([]any)[0].(map[string]any)["evaluation"].(map[string]any)["outcome"])

		// A batch (the default backend): every item scored by the model.
		tok := env.PolicyFirst.Token
		pr, err := env.Client(tok).CreatePolicyWithResponse(t.Context(), client.CreatePolicyRequest{PolicyKey: "model", Text: modelPolicyText})
		require.NoError(t, err)
		created := env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: pr.JSON200.Policy.PolicyId})
		r := putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\nr1,text,a scam\nr2,text,nothing to see\n")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		b := env.waitForBatch(t, tok, created.BatchJobId)
		require.Equal(t, client.BATCHJOBSTATECOMPLETED, b.State)
		lines := readOutput(t, getFile(t, *b.OutputFileUrl).Body)
		require.Len(t, lines, 2)
		require.Equal(t, "OUTCOME_TRUE", lines[0].Result)
		require.Equal(t, "OUTCOME_FALSE", lines[1].Result)
		raw, err := json.Marshal(lines[0].Report)
		require.NoError(t, err)
		var rep map[string]any
		require.NoError(t, json.Unmarshal(raw, &rep))
		require.Equal(t, "OUTCOME_TRUE", sectionsOf(t, rep)["Scam"]["result"])

		// A batch names its stack in options.options, kept with the batch
		// and given to its items' jobs: the dead backend fails them.
		created = env.createBatch(t, tok, client.CreateBatchJobRequest{PolicyId: pr.JSON200.Policy.PolicyId,
			Options: &client.EvaluationOptions{Options: &client.StringMap{"stack": "dead"}}})
		r = putFile(t, *created.InputFileUploadUrl, "ref_id,type,content\nr1,text,a scam\n")
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		b = env.waitForBatch(t, tok, created.BatchJobId)
		lines = readOutput(t, getFile(t, *b.OutputFileUrl).Body)
		require.Len(t, lines, 1)
		raw, err = json.Marshal(lines[0].Report)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &rep))
		require.Equal(t, "OUTCOME_FAILED", sectionsOf(t, rep)["Scam"]["result"])
		require.Contains(t, firstAssertion(sectionsOf(t, rep)["Scam"])["message"], "(model gone-1 failed: unreachable)")
		bad = env.call(http.MethodPost, "/v1/batch-jobs", tok, mustJSON(t, map[string]any{
			"policyId": pr.JSON200.Policy.PolicyId, "options": map[string]any{"options": map[string]string{"stack": "gpt-9"}},
		}))
		require.Contains(t, requireStatus(t, bad, http.StatusBadRequest, domain.InvalidArgument)["message"], "options.options.stack")
	})
}
