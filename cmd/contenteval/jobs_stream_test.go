package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// streamLines posts a stream request and returns the response with a reader
// of its lines.
func (e *testEnv) stream(token, body string) (*http.Response, *bufio.Reader) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/jobs/stream", strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := specClient.Do(req)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp, bufio.NewReader(resp.Body)
}

func TestStreamJobs(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		doc, _ := loadSpec(t)
		lineSchema := doc.Components.Schemas["StreamJobsMessage"].Value
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		texts := []string{"buy now", "nothing here", "i will kill you"}
		body, err := json.Marshal(map[string]any{
			"policyId": policyID, "threshold": 0.5,
			"contentData": []map[string]any{
				{"text": texts[0], "metadata": map[string]string{"k": "0"}}, {"text": texts[1]},
				{"image": []byte("not an image")}, {"text": texts[2]},
			},
		})
		require.NoError(t, err)
		resp, rd := env.stream(env.PolicyFirst.Token, string(body))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))

		// Read line by line as the lines arrive.
		var jobID string
		var lines []map[string]any
		for {
			line, err := rd.ReadBytes('\n')
			if len(line) == 0 && err != nil {
				break
			}
			require.True(t, bytes.HasSuffix(line, []byte("\n")), "every line ends with a newline: %q", line)
			var v any
			require.NoError(t, json.Unmarshal(line, &v), "line %q", line)
			require.NoError(t, lineSchema.VisitJSON(v), "line %s", line)
			lines = append(lines, v.(map[string]any))
		}
		require.Len(t, lines, 4, "one line per entry")
		textIdx := 0
		for i, l := range lines {
			if i == 2 {
				// Not an image: a precheck failure line (code 1).
				e := l["error"].(map[string]any)
				require.EqualValues(t, domain.Canceled, e["code"])
				require.Equal(t, string(domain.PrecheckFailureInvalidImage), e["details"].([]any)[0].(map[string]any)["type"])
				require.NotContains(t, l, "result")
				continue
			}
			res := l["result"].(map[string]any)
			require.NotContains(t, l, "error")
			require.Equal(t, sha(texts[textIdx]), res["contentHash"])
			require.NotEmpty(t, res["jobResultId"])
			if jobID == "" {
				jobID = res["jobUuid"].(string)
			}
			require.Equal(t, jobID, res["jobUuid"])
			rep := res["policyEvaluationReport"].(map[string]any)
			require.Equal(t, policyID, rep["policyId"])
			textIdx++
		}
		require.Equal(t, "OUTCOME_TRUE", lines[0]["result"].(map[string]any)["policyEvaluationReport"].(map[string]any)["result"])
		require.Equal(t, "OUTCOME_FALSE", lines[1]["result"].(map[string]any)["policyEvaluationReport"].(map[string]any)["result"])

		// The job is recorded; the image entry failed it.
		j := env.waitForJob(env.PolicyFirst.Token, jobID)
		require.Equal(t, client.JOBSTATUSFAILED, j.Status)
		require.Equal(t, client.JOBERRORREASONCONTENTPRECHECKFAILED, j.Error.Reason)
		require.Equal(t, client.JOBTYPESTANDARD, j.JobType)

		// A text-only stream completes, with its results. Read as the spec
		// tells a Go client to: StreamJobs (the raw response) and a
		// scanner, each line a StreamJobsMessage.
		sresp, err := env.Client(env.PolicyFirst.Token).StreamJobs(context.Background(), client.StreamJobsRequest{
			PolicyId: policyID, ContentData: []client.ContentData{textItem("buy now", nil), textItem("x", nil)},
		})
		require.NoError(t, err)
		defer sresp.Body.Close()
		require.Equal(t, http.StatusOK, sresp.StatusCode)
		var msgs []client.StreamJobsMessage
		for sc := bufio.NewScanner(sresp.Body); sc.Scan(); {
			var m client.StreamJobsMessage
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
			msgs = append(msgs, m)
		}
		require.Len(t, msgs, 2)
		require.NotNil(t, msgs[0].Result)
		j = env.waitForJob(env.PolicyFirst.Token, msgs[0].Result.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		require.Len(t, *j.Results, 2)
	})
}

// TestStreamDisconnectCancels closes the connection after the first line:
// the remaining entries are not evaluated and the job is recorded canceled.
func TestStreamDisconnectCancels(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.JobMaxItems = 1000 }, func(t *testing.T, env *testEnv) {
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		// Enough work that the stream cannot finish before the server sees
		// the client go away, small enough to validate quickly.
		entries := make([]map[string]string, 1000)
		big := strings.Repeat("lorem ipsum dolor sit amet buy now ", 240) // ~8 KiB each
		for i := range entries {
			entries[i] = map[string]string{"text": big}
		}
		body, err := json.Marshal(map[string]any{"policyId": policyID, "contentData": entries})
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, env.URL+"/v1/jobs/stream", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+env.PolicyFirst.Token)
		req.Header.Set("Content-Type", "application/json")
		// A transport of its own, so closing the body really closes the
		// connection.
		tr := &http.Transport{DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: contractTransport{base: tr}}).Do(req)
		require.NoError(t, err)
		rd := bufio.NewReader(resp.Body)
		line, err := rd.ReadBytes('\n')
		require.NoError(t, err)
		var first struct {
			Result struct {
				JobUuid string `json:"jobUuid"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(line, &first))
		require.NoError(t, resp.Body.Close())

		j := env.waitForJob(env.PolicyFirst.Token, first.Result.JobUuid)
		require.Equal(t, client.JOBSTATUSCANCELED, j.Status)
		require.Nil(t, j.Results)
	})
}
