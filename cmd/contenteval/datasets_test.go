package main

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// datasetCase is one example of the 20-example dataset of
// TestDatasetRuns_CountsMetricsAndCompare with its outcome under each
// version: v1 flags "buy now", v2 also "free money".
type datasetCase struct {
	text     string
	expected client.EvaluationResult
	v1, v2   client.Outcome
}

func spamDataset() []datasetCase {
	var cs []datasetCase
	add := func(n int, format string, expected client.EvaluationResult, v1, v2 client.Outcome) {
		for i := range n {
			cs = append(cs, datasetCase{fmt.Sprintf(format, len(cs), i), expected, v1, v2})
		}
	}
	T, F := client.EVALUATIONRESULTTRUE, client.EVALUATIONRESULTFALSE
	add(6, "example %d: buy now, offer %d", T, client.OUTCOMETRUE, client.OUTCOMETRUE)              // TP, TP
	add(2, "example %d: I said buy now to my friend %d", F, client.OUTCOMETRUE, client.OUTCOMETRUE) // FP, FP
	add(4, "example %d: free money for you %d", T, client.OUTCOMEFALSE, client.OUTCOMETRUE)         // FN, TP
	add(1, "example %d: free money is a myth %d", F, client.OUTCOMEFALSE, client.OUTCOMETRUE)       // TN, FP
	add(7, "example %d: the weather is nice %d", F, client.OUTCOMEFALSE, client.OUTCOMEFALSE)       // TN, TN
	return cs
}

func (e *testEnv) labelClient() *client.ClientWithResponses { return e.Client(e.LabelFirst.Token) }

func createExamples(t *testing.T, c *client.ClientWithResponses, labelID string, cs []datasetCase) []client.DatasetExample {
	t.Helper()
	in := make([]client.DatasetExampleInput, len(cs))
	for i, dc := range cs {
		in[i] = client.DatasetExampleInput{
			ContentData:     client.ContentData{Text: &cs[i].text, Metadata: &client.StringMap{"i": fmt.Sprint(i)}},
			ExpectedOutcome: dc.expected, Note: &cs[i].text,
		}
	}
	r, err := c.CreateDatasetExamplesWithResponse(context.Background(), labelID, client.CreateDatasetExamplesRequest{Examples: in})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	return r.JSON200.Examples
}

// waitForRun polls a run until it is finished.
func waitForRun(t *testing.T, c *client.ClientWithResponses, labelID, runID string) client.DatasetRun {
	t.Helper()
	var run client.DatasetRun
	testwait.For(t, 2*time.Minute, "dataset run "+runID+" to end", func() (bool, error) {
		r, err := c.GetDatasetRunWithResponse(context.Background(), labelID, runID)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		run = r.JSON200.DatasetRun
		return run.State == client.DATASETRUNSTATECOMPLETED || run.State == client.DATASETRUNSTATEFAILED, fmt.Errorf("state %s", run.State)
	})
	return run
}

func startRun(t *testing.T, c *client.ClientWithResponses, labelID, versionID string, threshold *float64) client.DatasetRun {
	t.Helper()
	r, err := c.CreateDatasetRunWithResponse(context.Background(), labelID, versionID, client.CreateDatasetRunRequest{Threshold: threshold})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	return r.JSON200.DatasetRun
}

func TestDatasetExamples_CreateListDelete(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.labelClient()
		label := env.createLabel(env.LabelFirst.Token, map[string]any{"name": "Spam"})
		id := label.LabelId
		cs := spamDataset()
		first := createExamples(t, c, id, cs[:12])
		second := createExamples(t, c, id, cs[12:])
		created := append(first, second...)
		require.Len(t, created, 20)
		for i, e := range created {
			require.Equal(t, id, e.LabelId)
			require.Equal(t, cs[i].text, *e.ContentData.Text, "request order")
			require.Equal(t, sha(cs[i].text), e.ContentHash)
			require.Equal(t, cs[i].expected, e.ExpectedOutcome)
			require.Equal(t, cs[i].text, e.Note)
			require.Equal(t, fmt.Sprint(i%12), (*e.ContentData.Metadata)["i"])
		}

		// Paged, oldest first, the content stored.
		var listed []client.DatasetExample
		pages := 0
		params := &client.ListDatasetExamplesParams{PageSize: ptr[int32](7)}
		for {
			r, err := c.ListDatasetExamplesWithResponse(ctx, id, params)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			listed = append(listed, r.JSON200.Examples...)
			pages++
			if r.JSON200.NextPageToken == nil {
				break
			}
			params.PageToken = r.JSON200.NextPageToken
		}
		require.Equal(t, 3, pages)
		require.Equal(t, created, listed)

		// Delete one: gone from the list, a second delete is NOT_FOUND.
		d, err := c.DeleteDatasetExampleWithResponse(ctx, id, created[3].ExampleId)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, d.StatusCode(), "%s", d.Body)
		require.Equal(t, client.DeleteDatasetExampleResponse{ExampleId: created[3].ExampleId, Deleted: true}, *d.JSON200)
		d, err = c.DeleteDatasetExampleWithResponse(ctx, id, created[3].ExampleId)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, d.StatusCode())
		r, err := c.ListDatasetExamplesWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Len(t, r.JSON200.Examples, 19)
		require.NotContains(t, r.JSON200.Examples, created[3])

		// Bad input is 400 naming the field; nothing of the call is stored.
		path := "/v1/labels/" + id + "/examples"
		tok := env.LabelFirst.Token
		for _, tc := range []struct{ name, body, field string }{
			{"no examples", `{"examples":[]}`, "examples"},
			{"unspecified outcome", `{"examples":[{"contentData":{"text":"a"},"expectedOutcome":"EVALUATION_RESULT_TRUE"},{"contentData":{"text":"b"},"expectedOutcome":"EVALUATION_RESULT_UNSPECIFIED"}]}`, "examples[1].expectedOutcome"},
			{"two contents", `{"examples":[{"contentData":{"text":"a","imageUrl":"https://example.com/a.png"},"expectedOutcome":"EVALUATION_RESULT_TRUE"}]}`, "examples[0].contentData"},
			{"video", `{"examples":[{"contentData":{"videoUrl":"https://example.com/a.mp4"},"expectedOutcome":"EVALUATION_RESULT_TRUE"}]}`, "examples[0].contentData"},
			{"note too long", `{"examples":[{"contentData":{"text":"a"},"expectedOutcome":"EVALUATION_RESULT_TRUE","note":"` + strings.Repeat("n", 10001) + `"}]}`, "examples[0].note"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				m := requireStatus(t, env.call(http.MethodPost, path, tok, tc.body), http.StatusBadRequest, domain.InvalidArgument)
				require.Contains(t, fieldViolations(t, m), tc.field)
			})
		}
		many := make([]string, 1001)
		for i := range many {
			many[i] = `{"contentData":{"text":"x"},"expectedOutcome":"EVALUATION_RESULT_TRUE"}`
		}
		m := requireStatus(t, env.call(http.MethodPost, path, tok, `{"examples":[`+strings.Join(many, ",")+`]}`), http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "examples")
		requireStatus(t, env.call(http.MethodGet, path+"?page_size=-1", tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		r, err = c.ListDatasetExamplesWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Len(t, r.JSON200.Examples, 19, "nothing of the refused calls is stored")
	})
}

// TestDatasetExamples_Images stores image bytes with their hash and refuses
// an image the precheck blocks with the 499 body, storing nothing of the
// call.
func TestDatasetExamples_Images(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.labelClient()
		bad := testPNG(t, "KNOWN BAD")
		sum := md5.Sum(bad)
		_, err := env.Main.Precheck.Import(ctx, "known", imaging.KindMD5, strings.NewReader(hex.EncodeToString(sum[:])+"\n"))
		require.NoError(t, err)
		require.NoError(t, env.Main.Precheck.Reload(ctx))
		good := testPNG(t, "HELLO")
		label := env.createLabel(env.LabelFirst.Token, map[string]any{"name": "Pictures"})
		id := label.LabelId

		body := fmt.Sprintf(`{"examples":[{"contentData":{"text":"fine"},"expectedOutcome":"EVALUATION_RESULT_FALSE"},
			{"contentData":{"image":%q},"expectedOutcome":"EVALUATION_RESULT_TRUE"}]}`, base64.StdEncoding.EncodeToString(bad))
		m := requireStatus(t, env.call(http.MethodPost, "/v1/labels/"+id+"/examples", env.LabelFirst.Token, body), 499, domain.Canceled)
		d := m["details"].([]any)[0].(map[string]any)
		require.Equal(t, string(domain.PrecheckFailureNCMEC), d["type"])
		require.Equal(t, imaging.ContentHash(bad), d["details"].(map[string]any)["contentHash"])
		r, err := c.ListDatasetExamplesWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Empty(t, r.JSON200.Examples, "nothing of a refused call is stored")

		cr, err := c.CreateDatasetExamplesWithResponse(ctx, id, client.CreateDatasetExamplesRequest{Examples: []client.DatasetExampleInput{
			{ContentData: client.ContentData{Image: &good}, ExpectedOutcome: client.EVALUATIONRESULTTRUE},
		}})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, cr.StatusCode(), "%s", cr.Body)
		r, err = c.ListDatasetExamplesWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Len(t, r.JSON200.Examples, 1)
		e := r.JSON200.Examples[0]
		require.Equal(t, good, *e.ContentData.Image, "the image bytes are stored")
		require.Nil(t, e.ContentData.Text)
		require.Equal(t, imaging.ContentHash(good), e.ContentHash)
	})
}

// compareByPages returns the changes from run baseID to run runID of
// label id, read in pages of size.
func compareByPages(t *testing.T, c *client.ClientWithResponses, id, runID, baseID string, size int32) []client.DatasetRunChange {
	t.Helper()
	var paged []client.DatasetRunChange
	cp := &client.CompareDatasetRunsParams{BaseDatasetRunId: baseID, PageSize: &size}
	for {
		r, err := c.CompareDatasetRunsWithResponse(context.Background(), id, runID, cp)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		paged = append(paged, r.JSON200.Changes...)
		if r.JSON200.NextPageToken == nil {
			return paged
		}
		cp.PageToken = r.JSON200.NextPageToken
	}
}

// TestDatasetRuns_CountsMetricsAndCompare runs two versions of a label over
// 20 examples with known outcomes: exact counts, precision, recall, F1 and
// accuracy, per-example results with reports, and the comparison listing
// exactly the examples whose outcome changed.
func TestDatasetRuns_CountsMetricsAndCompare(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.labelClient()
		tok := env.LabelFirst.Token
		label := env.createLabel(tok, map[string]any{"name": "Spam"})
		id := label.LabelId
		v1 := env.createVersion(tok, id, map[string]any{"text": `=("buy now")`})
		v2 := env.createVersion(tok, id, map[string]any{"text": `ANY(=("buy now"), =("free money"))`})
		cs := spamDataset()
		examples := createExamples(t, c, id, cs)

		run1 := startRun(t, c, id, v1.LabelVersionId, nil)
		require.Equal(t, client.DATASETRUNSTATEPENDING, run1.State)
		require.Equal(t, int32(20), run1.ExampleCount)
		require.Equal(t, 0.5, run1.Threshold)
		run1 = waitForRun(t, c, id, run1.DatasetRunId)
		require.Equal(t, client.DATASETRUNSTATECOMPLETED, run1.State)
		require.Equal(t, [5]int32{6, 2, 8, 4, 0}, [5]int32{run1.TruePositives, run1.FalsePositives, run1.TrueNegatives, run1.FalseNegatives, run1.Failed})
		require.InDelta(t, 0.75, *run1.Precision, 1e-12)
		require.InDelta(t, 0.6, *run1.Recall, 1e-12)
		require.InDelta(t, 2.0/3.0, *run1.F1, 1e-12)
		require.InDelta(t, 0.7, *run1.Accuracy, 1e-12)
		require.NotNil(t, run1.Completed)

		// Per-example results, paged, in example order, with reports.
		var results []client.DatasetRunResult
		params := &client.ListDatasetRunResultsParams{PageSize: ptr[int32](8)}
		for {
			r, err := c.ListDatasetRunResultsWithResponse(ctx, id, run1.DatasetRunId, params)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			results = append(results, r.JSON200.Results...)
			if r.JSON200.NextPageToken == nil {
				break
			}
			params.PageToken = r.JSON200.NextPageToken
		}
		require.Len(t, results, 20)
		for i, r := range results {
			require.Equal(t, examples[i].ExampleId, r.ExampleId)
			require.Equal(t, cs[i].expected, r.ExpectedOutcome)
			require.Equal(t, cs[i].v1, r.ActualOutcome, "example %d: %s", i, cs[i].text)
			require.NotNil(t, r.Report)
			require.Equal(t, id, *r.Report.LabelId)
			require.Equal(t, v1.LabelVersionId, *r.Report.LabelVersionId)
			require.Equal(t, "Spam", (r.Report.SectionEvaluationReports)[0].Name)
			if cs[i].v1 == client.OUTCOMETRUE {
				require.Equal(t, 1.0, r.Score)
			}
		}

		run2 := waitForRun(t, c, id, startRun(t, c, id, v2.LabelVersionId, nil).DatasetRunId)
		require.Equal(t, [5]int32{10, 3, 7, 0, 0}, [5]int32{run2.TruePositives, run2.FalsePositives, run2.TrueNegatives, run2.FalseNegatives, run2.Failed})
		require.InDelta(t, 10.0/13.0, *run2.Precision, 1e-12)
		require.InDelta(t, 1.0, *run2.Recall, 1e-12)
		require.InDelta(t, 20.0/23.0, *run2.F1, 1e-12)

		// The comparison lists exactly the examples whose outcome changed.
		cr, err := c.CompareDatasetRunsWithResponse(ctx, id, run2.DatasetRunId, &client.CompareDatasetRunsParams{BaseDatasetRunId: run1.DatasetRunId})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, cr.StatusCode(), "%s", cr.Body)
		var want []client.DatasetRunChange
		for i, dc := range cs {
			if dc.v1 != dc.v2 {
				want = append(want, client.DatasetRunChange{ExampleId: examples[i].ExampleId, ExpectedOutcome: dc.expected,
					BaseOutcome: dc.v1, Outcome: dc.v2})
			}
		}
		require.Len(t, want, 5)
		require.Equal(t, want, cr.JSON200.Changes)
		require.Nil(t, cr.JSON200.NextPageToken)
		// Paged by one.
		require.Equal(t, want, compareByPages(t, c, id, run2.DatasetRunId, run1.DatasetRunId, 1))

		// The listing: newest first.
		lr, err := c.ListDatasetRunsWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, lr.StatusCode(), "%s", lr.Body)
		require.Len(t, lr.JSON200.DatasetRuns, 2)
		require.Equal(t, run2.DatasetRunId, lr.JSON200.DatasetRuns[0].DatasetRunId)
		require.Equal(t, run1, lr.JSON200.DatasetRuns[1])

		// A threshold above every score: nothing is TRUE; the run says so.
		run3 := waitForRun(t, c, id, startRun(t, c, id, v1.LabelVersionId, ptr(0.9)).DatasetRunId)
		require.Equal(t, 0.9, run3.Threshold)
		require.Equal(t, int32(6), run3.TruePositives, "exact matches score 1")

		// The runs are not client jobs: GET /v1/jobs does not list them.
		jr, err := c.ListJobsWithResponse(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, jr.JSON200.Jobs)
	})
}

func TestDatasetRuns_EmptyDeletedAndErrors(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		c := env.labelClient()
		tok := env.LabelFirst.Token
		label := env.createLabel(tok, map[string]any{"name": "Spam"})
		id := label.LabelId
		v := env.createVersion(tok, id, map[string]any{"text": `=("buy now")`})
		vid := v.LabelVersionId

		// No examples: completed at once, no rates.
		empty := startRun(t, c, id, vid, nil)
		require.Equal(t, client.DATASETRUNSTATECOMPLETED, empty.State)
		require.Zero(t, empty.ExampleCount)
		require.Nil(t, empty.Precision)
		require.Nil(t, empty.Recall)
		require.Nil(t, empty.F1)
		require.Nil(t, empty.Accuracy)

		// Comparing with an unfinished run is FAILED_PRECONDITION; with an
		// unknown one NOT_FOUND; without a base INVALID_ARGUMENT.
		base := "/v1/labels/" + id + "/dataset-runs/" + empty.DatasetRunId + "/compare"
		requireStatus(t, env.call(http.MethodGet, base+"?baseDatasetRunId=nope", tok, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, base, tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		r := env.call(http.MethodGet, base+"?base_dataset_run_id="+empty.DatasetRunId, tok, "")
		require.Equal(t, http.StatusOK, r.Status, "the snake_case alias: %s", r.Body)

		// Bad thresholds, unknown versions, another label's version.
		other := env.createLabel(tok, map[string]any{"name": "Other"})
		ov := env.createVersion(tok, other.LabelId, map[string]any{"text": `=("x")`})
		runs := "/v1/labels/" + id + "/versions/"
		requireStatus(t, env.call(http.MethodPost, runs+vid+"/dataset-runs", tok, `{"threshold":1.5}`), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodPost, runs+"nope/dataset-runs", tok, `{}`), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodPost, runs+ov.LabelVersionId+"/dataset-runs", tok, `{}`), http.StatusNotFound, domain.NotFound)
		r = env.call(http.MethodPost, runs+vid+"/dataset-runs", tok, "")
		require.Equal(t, http.StatusOK, r.Status, "no body: the defaults: %s", r.Body)

		// Wrong account type.
		requireStatus(t, env.call(http.MethodPost, runs+vid+"/dataset-runs", env.PolicyFirst.Token, `{}`), http.StatusBadRequest, domain.FailedPrecondition)
	})
}

// TestQuality_OtherAccountIsNotFound: every dataset endpoint answers 404 for
// another account's label, example or run, and leaves them unchanged.
func TestQuality_OtherAccountIsNotFound(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.labelClient()
		tok := env.LabelFirst.Token
		label := env.createLabel(tok, map[string]any{"name": "Spam"})
		id := label.LabelId
		v := env.createVersion(tok, id, map[string]any{"text": `=("buy now")`})
		ex := createExamples(t, c, id, spamDataset()[:3])
		run := waitForRun(t, c, id, startRun(t, c, id, v.LabelVersionId, nil).DatasetRunId)

		other := env.newAccount("intruder", domain.AccountLabelFirst)
		// The intruder's own label, to try theirs-and-ours mixes.
		theirs := env.createLabel(other.Token, map[string]any{"name": "Spam"})
		tv := env.createVersion(other.Token, theirs.LabelId, map[string]any{"text": `=("buy now")`})
		theirRun := startRun(t, env.Client(other.Token), theirs.LabelId, tv.LabelVersionId, nil)
		example := `{"examples":[{"contentData":{"text":"x"},"expectedOutcome":"EVALUATION_RESULT_TRUE"}]}`
		for _, tc := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/labels/" + id + "/examples", ""},
			{http.MethodPost, "/v1/labels/" + id + "/examples", example},
			{http.MethodDelete, "/v1/labels/" + id + "/examples/" + ex[0].ExampleId, ""},
			{http.MethodDelete, "/v1/labels/" + theirs.LabelId + "/examples/" + ex[0].ExampleId, ""},
			{http.MethodPost, "/v1/labels/" + id + "/versions/" + v.LabelVersionId + "/dataset-runs", `{}`},
			{http.MethodPost, "/v1/labels/" + theirs.LabelId + "/versions/" + v.LabelVersionId + "/dataset-runs", `{}`},
			{http.MethodGet, "/v1/labels/" + id + "/dataset-runs", ""},
			{http.MethodGet, "/v1/labels/" + id + "/dataset-runs/" + run.DatasetRunId, ""},
			{http.MethodGet, "/v1/labels/" + theirs.LabelId + "/dataset-runs/" + run.DatasetRunId, ""},
			{http.MethodGet, "/v1/labels/" + id + "/dataset-runs/" + run.DatasetRunId + "/results", ""},
			{http.MethodGet, "/v1/labels/" + id + "/dataset-runs/" + run.DatasetRunId + "/compare?baseDatasetRunId=" + run.DatasetRunId, ""},
			{http.MethodGet, "/v1/labels/" + theirs.LabelId + "/dataset-runs/" + theirRun.DatasetRunId + "/compare?baseDatasetRunId=" + run.DatasetRunId, ""},
		} {
			t.Run(tc.method+" "+tc.path, func(t *testing.T) {
				requireStatus(t, env.call(tc.method, tc.path, other.Token, tc.body), http.StatusNotFound, domain.NotFound)
			})
		}
		r, err := c.ListDatasetExamplesWithResponse(ctx, id, nil)
		require.NoError(t, err)
		require.Len(t, r.JSON200.Examples, 3, "the owner's examples are untouched")
	})
}

// TestDatasetRuns_ShareTheQueueFairly: a large run queued first does not
// hold back another account's job. With two workers, the fair claim gives
// the other account a worker as soon as one is free, so its job completes
// while most of the run is still queued.
func TestDatasetRuns_ShareTheQueueFairly(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.JobWorkers = 2 }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.labelClient()
		tok := env.LabelFirst.Token
		label := env.createLabel(tok, map[string]any{"name": "Spam"})
		id := label.LabelId
		v := env.createVersion(tok, id, map[string]any{"text": `=("buy now")`})
		const n = 5000
		for from := 0; from < n; from += 1000 {
			in := make([]client.DatasetExampleInput, 1000)
			for i := range in {
				text := fmt.Sprintf("example %d: buy now %s", from+i, strings.Repeat("lorem ipsum ", 20))
				in[i] = client.DatasetExampleInput{ContentData: client.ContentData{Text: &text}, ExpectedOutcome: client.EVALUATIONRESULTTRUE}
			}
			r, err := c.CreateDatasetExamplesWithResponse(ctx, id, client.CreateDatasetExamplesRequest{Examples: in})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		}
		run := startRun(t, c, id, v.LabelVersionId, nil)

		pf := env.PolicyFirst.Token
		policyID := env.createPolicy(pf, "p")
		jr := env.call(http.MethodPost, "/v1/jobs", pf, fmt.Sprintf(`{"policyId":%q,"contentData":[{"text":"hello"}]}`, policyID))
		require.Equal(t, http.StatusOK, jr.Status, "%s", jr.Body)
		job := env.waitForJob(pf, decodeAs[client.CreateJobResponse](t, jr).Job.JobUuid)
		require.Equal(t, client.JOBSTATUSCOMPLETED, job.Status)

		var left int
		require.NoError(t, env.Main.DB.GetContext(ctx, &left, env.Main.DB.Rebind(`SELECT chunks_left FROM dataset_runs WHERE id = ?`), run.DatasetRunId))
		t.Logf("the other account's job completed with %d of %d chunks of the run left", left, n/250)
		require.Greater(t, left, n/250/2, "the job did not wait for the run")
		require.Equal(t, client.DATASETRUNSTATECOMPLETED, waitForRun(t, c, id, run.DatasetRunId).State)
	})
}

// TestDatasetExamples_LargeCallsAndTheLabelLimit: a call of 1,000 examples
// of 4 KiB (a 4 MiB body) is content, not rule text, and is taken; a label
// holds 10,000 examples and not one more.
func TestDatasetExamples_LargeCallsAndTheLabelLimit(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.labelClient()
		label := env.createLabel(env.LabelFirst.Token, map[string]any{"name": "Big"})
		id := label.LabelId
		call := func(n, size int) *client.CreateDatasetExamplesHTTPResponse {
			in := make([]client.DatasetExampleInput, n)
			for i := range in {
				text := fmt.Sprintf("%d %s", i, strings.Repeat("x", size))
				in[i] = client.DatasetExampleInput{ContentData: client.ContentData{Text: &text}, ExpectedOutcome: client.EVALUATIONRESULTFALSE}
			}
			r, err := c.CreateDatasetExamplesWithResponse(ctx, id, client.CreateDatasetExamplesRequest{Examples: in})
			require.NoError(t, err)
			return r
		}
		r := call(1000, 4096)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%.300s", r.Body)
		for range 9 {
			r = call(1000, 10)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%.300s", r.Body)
		}
		r = call(1, 10)
		require.Equal(t, http.StatusBadRequest, r.StatusCode(), "%.300s", r.Body)
		require.Contains(t, string(r.Body), `"field":"examples"`)
		lr, err := c.ListDatasetExamplesWithResponse(ctx, id, &client.ListDatasetExamplesParams{PageSize: ptr[int32](1000)})
		require.NoError(t, err)
		require.Len(t, lr.JSON200.Examples, 1000)
		require.NotNil(t, lr.JSON200.NextPageToken)
	})
}
