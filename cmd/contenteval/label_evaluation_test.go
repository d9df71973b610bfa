package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/stretchr/testify/require"
)

// evalFixture is a label-first account with labels and versions to evaluate.
type evalFixture struct {
	threat, archived, disabled client.Label
	// threatV has labelEvalOptions.threshold 0.9 and rules `~("stupid")`,
	// which scores 0.8 on "you are stupld" (edit distance 1).
	threatV, archivedV, disabledV client.LabelVersion
}

func newEvalFixture(t *testing.T, env *testEnv) evalFixture {
	t.Helper()
	tok := env.LabelFirst.Token
	var f evalFixture
	f.threat = env.createLabel(tok, map[string]any{"name": "Insult"})
	f.threatV = env.createVersion(tok, f.threat.LabelId, map[string]any{
		"text": `~("stupid")`, "labelEvalOptions": map[string]any{"threshold": 0.9}, "globalContext": "a forum",
	})
	f.archived = env.createLabel(tok, map[string]any{"name": "Archived"})
	f.archivedV = env.createVersion(tok, f.archived.LabelId, map[string]any{"text": `=("x")`})
	env.call(http.MethodPost, "/v1/labels/"+f.archived.LabelId+"/archive", tok, "")
	f.disabled = env.createLabel(tok, map[string]any{"name": "Disabled"})
	f.disabledV = env.createVersion(tok, f.disabled.LabelId, map[string]any{"text": `=("x")`})
	env.call(http.MethodPatch, "/v1/labels/"+f.disabled.LabelId, tok, `{"disabled":true}`)
	return f
}

func (e *testEnv) evaluate(token string, body any) client.EvaluateLabelsResponse {
	e.t.Helper()
	return decodeAs[client.EvaluateLabelsResponse](e.t, e.call(http.MethodPost, "/v1/labels/evaluate", token, mustJSON(e.t, body)))
}

func TestEvaluateLabels_ResultsJobsAndErrors(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		f := newEvalFixture(t, env)
		other := env.newAccount("other", domain.AccountLabelFirst)
		ol := env.createLabel(other.Token, map[string]any{"name": "Theirs"})
		ov := env.createVersion(other.Token, ol.LabelId, map[string]any{"text": `=("x")`})

		ids := []string{f.threatV.LabelVersionId, "unknown", f.disabledV.LabelVersionId, ov.LabelVersionId, f.archivedV.LabelVersionId, f.threatV.LabelVersionId}
		res := env.evaluate(tok, map[string]any{
			"contentData": map[string]any{"text": "you are stupld", "metadata": map[string]string{"k": "v"}}, "labelVersionIds": ids,
		})
		require.NotEmpty(t, *res.ContentHash)
		require.Len(t, res.Results, len(ids), "one result per id, in request order")
		rs := res.Results
		for i, id := range ids {
			require.Equal(t, id, rs[i].LabelVersionId, "order")
		}
		// The good ones: a job each, evaluated with the version's threshold.
		for _, i := range []int{0, 5} {
			r := rs[i]
			require.Nil(t, r.Error)
			require.Equal(t, f.threat.LabelId, *r.LabelId)
			require.NotEmpty(t, *r.JobUuid)
			require.InDelta(t, 0.8, r.Evaluation.Score, 1e-9)
			require.Equal(t, 0.9, r.Evaluation.Threshold)
			require.Equal(t, client.OUTCOMEFALSE, r.Evaluation.Outcome)
			require.Equal(t, f.threat.LabelId, *r.Evaluation.Report.LabelId)
			require.Equal(t, *res.ContentHash, *r.Evaluation.Report.ContentHash)
		}
		require.NotEqual(t, *rs[0].JobUuid, *rs[5].JobUuid, "one job per version entry")
		// The others: an error each and no job.
		for _, i := range []int{1, 2, 3, 4} {
			require.NotNil(t, rs[i].Error, "result %d", i)
			require.NotEmpty(t, *rs[i].Error)
			require.Nil(t, rs[i].Evaluation)
			require.Nil(t, rs[i].JobUuid)
		}
		require.Contains(t, *rs[2].Error, "disabled")
		require.Contains(t, *rs[4].Error, "archived")
		require.Contains(t, *rs[3].Error, "not found", "another account's version looks unknown")

		// The job is readable through the job endpoints.
		job := decodeAs[client.GetJobResponse](t, env.call(http.MethodGet, "/v1/jobs/"+*rs[0].JobUuid, tok, "")).Job
		require.Equal(t, client.JOBSTATUSCOMPLETED, job.Status)
		require.Equal(t, f.threat.LabelId, *job.LabelId)
		require.Equal(t, f.threatV.LabelVersionId, *job.LabelVersionId)
		require.Equal(t, 0.9, job.Threshold)
		require.Len(t, *job.Results, 1)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+*rs[0].JobUuid, other.Token, ""), http.StatusNotFound, domain.NotFound)
		jobs := decodeAs[client.ListJobsResponse](t, env.call(http.MethodGet, "/v1/jobs", tok, ""))
		require.Len(t, jobs.Jobs, 2)

		// More than ten ids, or none, is INVALID_ARGUMENT.
		many := make([]string, 11)
		for i := range many {
			many[i] = f.threatV.LabelVersionId
		}
		r := env.call(http.MethodPost, "/v1/labels/evaluate", tok, mustJSON(t, map[string]any{"contentData": map[string]any{"text": "x"}, "labelVersionIds": many}))
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		r = env.call(http.MethodPost, "/v1/labels/evaluate", tok, mustJSON(t, map[string]any{"contentData": map[string]any{"text": "x"}, "labelVersionIds": []string{}}))
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		// Exactly ten is fine.
		res = env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": "x"}, "labelVersionIds": many[:10]})
		require.Len(t, res.Results, 10)
		// Content must carry exactly one type.
		r = env.call(http.MethodPost, "/v1/labels/evaluate", tok, mustJSON(t, map[string]any{"contentData": map[string]any{}, "labelVersionIds": many[:1]}))
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		// Policy-first accounts are refused.
		r = env.call(http.MethodPost, "/v1/labels/evaluate", env.PolicyFirst.Token, mustJSON(t, map[string]any{"contentData": map[string]any{"text": "x"}, "labelVersionIds": many[:1]}))
		requireStatus(t, r, http.StatusBadRequest, domain.FailedPrecondition)
	})
}

func TestEvaluateLabels_ThresholdPrecedenceAndCache(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		f := newEvalFixture(t, env)
		plain := env.createLabel(tok, map[string]any{"name": "Plain"})
		plainV := env.createVersion(tok, plain.LabelId, map[string]any{"text": `~("stupid")`})
		vid := f.threatV.LabelVersionId
		content := map[string]any{"text": "you are stupld"}
		eval := func(body map[string]any) client.LabelEvaluationResult {
			t.Helper()
			body["contentData"] = content
			res := env.evaluate(tok, body)
			require.Len(t, res.Results, 1)
			r := res.Results[0]
			require.Nil(t, r.Error)
			return r
		}
		for _, tc := range []struct {
			name    string
			body    map[string]any
			want    float64
			outcome client.Outcome
		}{
			{"version options", map[string]any{"labelVersionIds": []string{vid}}, 0.9, client.OUTCOMEFALSE},
			{"call options over version", map[string]any{"labelVersionIds": []string{vid}, "labelEvalOptions": map[string]any{"threshold": 0.6}}, 0.6, client.OUTCOMETRUE},
			{"request over call options", map[string]any{"labelVersionIds": []string{vid}, "threshold": 0.85, "labelEvalOptions": map[string]any{"threshold": 0.6}}, 0.85, client.OUTCOMEFALSE},
			{"request over version", map[string]any{"labelVersionIds": []string{vid}, "threshold": 0.3}, 0.3, client.OUTCOMETRUE},
			{"default 0.5", map[string]any{"labelVersionIds": []string{plainV.LabelVersionId}}, 0.5, client.OUTCOMETRUE},
		} {
			r := eval(tc.body)
			require.Equal(t, tc.want, r.Evaluation.Threshold, tc.name)
			require.Equal(t, tc.outcome, r.Evaluation.Outcome, tc.name)
			require.Equal(t, tc.want, r.Evaluation.Report.Threshold, tc.name)
			job := decodeAs[client.GetJobResponse](t, env.call(http.MethodGet, "/v1/jobs/"+*r.JobUuid, tok, "")).Job
			require.Equal(t, tc.want, job.Threshold, tc.name)
		}

		// The cache: the same (content, version, threshold, options) is
		// served from it; bypassCache and any change of key evaluate again.
		// Every call still records its own job.
		svc := env.Main.LabelEvaluation
		before := svc.CacheStats()
		r1 := eval(map[string]any{"labelVersionIds": []string{vid}})
		after := svc.CacheStats()
		require.Equal(t, before.Hits+1, after.Hits, "same key as the first case")
		require.InDelta(t, 0.8, r1.Evaluation.Score, 1e-9)
		before = after
		r2 := eval(map[string]any{"labelVersionIds": []string{vid}, "labelEvalOptions": map[string]any{"bypassCache": true}})
		after = svc.CacheStats()
		require.Equal(t, before.Hits, after.Hits, "bypassCache skips the cache")
		require.NotEqual(t, *r1.JobUuid, *r2.JobUuid)
		before = after
		eval(map[string]any{"labelVersionIds": []string{vid}, "globalContext": "another context"})
		eval(map[string]any{"labelVersionIds": []string{vid}, "threshold": 0.31})
		content = map[string]any{"text": "something else"}
		eval(map[string]any{"labelVersionIds": []string{vid}})
		after = svc.CacheStats()
		require.Equal(t, before.Hits, after.Hits, "global context, threshold and content are part of the key")
		require.Equal(t, before.Misses+3, after.Misses)
	})
}

// hitsFixture records jobs with label hits straight through the job store.
type hitsFixture struct {
	env   *testEnv
	store *persistence.Jobs
}

// recordJob creates a finished job of account with one result per hit count
// in perResult, and returns it with its results' ids.
func (h hitsFixture) recordJob(t *testing.T, accountID string, status domain.JobStatus, perResult ...int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	now := h.env.Clock.Now()
	until := now.Add(time.Hour)
	j := &domain.Job{
		ID: fmt.Sprintf("job-%d-%s", time.Now().UnixNano(), accountID[:8]), AccountID: accountID, Type: domain.JobTypeStandard,
		Status: domain.JobRunning, Threshold: 0.5, LeaseOwner: "test-owner", LeaseExpiresAt: &until, Attempts: 1,
		Created: now, Updated: now, Started: &now,
	}
	for range perResult {
		j.Contents = append(j.Contents, domain.ContentSummary{ContentHash: "sha256::00"})
		j.Input = append(j.Input, domain.ContentItem{Kind: domain.ContentText, Text: "x"})
	}
	require.NoError(t, h.store.CreateJob(ctx, j))
	if status == domain.JobRunning {
		return j.ID, nil
	}
	var results []*domain.JobResult
	var hits []*domain.LabelHit
	var ids []string
	seq := 0
	for i, n := range perResult {
		r := &domain.JobResult{ID: fmt.Sprintf("%s-r%d", j.ID, i), JobID: j.ID, Index: i, ContentHash: "sha256::00", Created: now}
		results = append(results, r)
		ids = append(ids, r.ID)
		for k := range n {
			end := int64(k*1000 + 500)
			hits = append(hits, &domain.LabelHit{JobID: j.ID, JobResultID: r.ID, Seq: seq, Label: fmt.Sprintf("L%d", seq),
				Modality: domain.ModalityAudio, Score: 0.9, StartMs: int64(k * 1000), EndMs: &end})
			seq++
		}
	}
	var jobErr *domain.JobError
	if status == domain.JobFailed {
		jobErr, results, hits = &domain.ErrJobDeadline, nil, nil
	}
	require.NoError(t, h.store.FinishJob(ctx, j.ID, "test-owner", status, now, jobErr, results, hits))
	return j.ID, ids
}

func (e *testEnv) hits(token, jobID, query string) client.ListJobLabelHitsResponse {
	e.t.Helper()
	return decodeAs[client.ListJobLabelHitsResponse](e.t, e.call(http.MethodGet, "/v1/jobs/"+jobID+"/labels?"+query, token, ""))
}

// requireLabelEvaluationHits checks the hits of label evaluations' jobs.
func requireLabelEvaluationHits(t *testing.T, env *testEnv) {
	t.Helper()
	tok := env.LabelFirst.Token
	f := newEvalFixture(t, env)
	res := env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": "you are stupld"}, "labelVersionIds": []string{f.threatV.LabelVersionId}, "threshold": 0.5})
	jobID := *res.Results[0].JobUuid
	p := env.hits(tok, jobID, "")
	require.Equal(t, client.JOBSTATUSCOMPLETED, p.Status)
	require.Len(t, *p.Labels, 1)
	hit := (*p.Labels)[0]
	require.Equal(t, "Insult", hit.Label)
	require.Equal(t, client.MODALITYTEXT, hit.Modality)
	require.InDelta(t, 0.8, hit.Score, 1e-9)
	require.Equal(t, "0", hit.StartMs)
	require.Equal(t, "00:00:00.000", hit.StartTimecode)
	require.Nil(t, hit.EndMs)
	require.Nil(t, p.NextPageToken)
	require.Nil(t, p.Error)
	// No TRUE label: an empty list.
	res = env.evaluate(tok, map[string]any{"contentData": map[string]any{"text": "you are stupld"}, "labelVersionIds": []string{f.threatV.LabelVersionId}})
	p = env.hits(tok, *res.Results[0].JobUuid, "")
	require.NotNil(t, p.Labels)
	require.Empty(t, *p.Labels)
}

// requireIncompleteJobHits checks the hits answer of a running job (its
// status only) and of a failed one (its status and error).
func requireIncompleteJobHits(t *testing.T, env *testEnv, h hitsFixture) {
	t.Helper()
	tok := env.LabelFirst.Token
	running, _ := h.recordJob(t, env.LabelFirst.ID, domain.JobRunning, 1)
	p := env.hits(tok, running, "")
	require.Equal(t, client.JOBSTATUSRUNNING, p.Status)
	require.Nil(t, p.Labels)
	require.Nil(t, p.NextPageToken)
	require.Nil(t, p.Error)
	failed, _ := h.recordJob(t, env.LabelFirst.ID, domain.JobFailed, 1)
	p = env.hits(tok, failed, "")
	require.Equal(t, client.JOBSTATUSFAILED, p.Status)
	require.Nil(t, p.Labels)
	require.Equal(t, client.JOBERRORREASONEXECUTIONDEADLINEEXCEEDED, p.Error.Reason)
	require.NotEmpty(t, p.Error.Message)
}

func TestJobLabelHits(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		h := hitsFixture{env: env, store: persistence.NewJobs(env.Main.DB)}

		// A label evaluation's hit: the TRUE label, text, at 0; none when
		// no label is TRUE.
		requireLabelEvaluationHits(t, env)

		// 1,001 hits over two results: paging at 1000 and 1001, stable order.
		big, results := h.recordJob(t, env.LabelFirst.ID, domain.JobCompleted, 600, 401)
		p := env.hits(tok, big, "")
		require.Len(t, *p.Labels, 1000)
		require.NotNil(t, p.NextPageToken)
		for i, hit := range *p.Labels {
			require.Equal(t, fmt.Sprintf("L%d", i), hit.Label)
		}
		require.Equal(t, results[0], (*p.Labels)[0].JobResultId)
		require.Equal(t, results[1], (*p.Labels)[600].JobResultId)
		first := (*p.Labels)[1]
		require.Equal(t, "1000", first.StartMs)
		require.Equal(t, "00:00:01.000", first.StartTimecode)
		require.Equal(t, "1500", *first.EndMs)
		require.Equal(t, "00:00:01.500", *first.EndTimecode)
		next := env.hits(tok, big, "pageToken="+url.QueryEscape(*p.NextPageToken))
		require.Len(t, *next.Labels, 1)
		require.Equal(t, "L1000", (*next.Labels)[0].Label)
		require.Nil(t, next.NextPageToken)
		for _, q := range []string{"pageSize=0", "pageSize=1000", "pageSize=1001", "pageSize=5000", "page_size=2000"} {
			p := env.hits(tok, big, q)
			require.Len(t, *p.Labels, 1000, q)
			require.NotNil(t, p.NextPageToken, q)
		}
		// Exactly 1,000 hits: one page, no token.
		exact, _ := h.recordJob(t, env.LabelFirst.ID, domain.JobCompleted, 1000)
		p = env.hits(tok, exact, "")
		require.Len(t, *p.Labels, 1000)
		require.Nil(t, p.NextPageToken)
		// Small pages walk everything once.
		var walked []string
		q := "pageSize=300&jobResultId=" + results[1]
		for range 5 {
			p := env.hits(tok, big, q)
			for _, hit := range *p.Labels {
				walked = append(walked, hit.Label)
			}
			if p.NextPageToken == nil {
				break
			}
			q = "pageSize=300&jobResultId=" + results[1] + "&pageToken=" + url.QueryEscape(*p.NextPageToken)
		}
		require.Len(t, walked, 401)
		require.Equal(t, "L600", walked[0])
		require.Equal(t, "L1000", walked[400])

		// Tokens are bound to the job and the jobResultId filter.
		tk := url.QueryEscape(*env.hits(tok, big, "pageSize=10").NextPageToken)
		small := env.hits(tok, big, "pageSize=10&jobResultId="+results[0])
		stk := url.QueryEscape(*small.NextPageToken)
		for _, c := range []struct{ job, query string }{
			{big, "jobResultId=" + results[0] + "&pageToken=" + tk},
			{big, "pageToken=" + stk},
			{big, "jobResultId=" + results[1] + "&pageToken=" + stk},
			{exact, "pageToken=" + tk},
			{big, "pageToken=garbage"},
		} {
			r := env.call(http.MethodGet, "/v1/jobs/"+c.job+"/labels?"+c.query, tok, "")
			m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
			require.Contains(t, fieldViolations(t, m), "pageToken")
		}
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+big+"/labels?pageSize=-1", tok, ""), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+big+"/labels?jobResultId=nope", tok, ""), http.StatusNotFound, domain.NotFound)
		// A result of another job is NOT_FOUND too; a result without hits
		// gives an empty list.
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+exact+"/labels?jobResultId="+results[0], tok, ""), http.StatusNotFound, domain.NotFound)
		sparse, sparseResults := h.recordJob(t, env.LabelFirst.ID, domain.JobCompleted, 0, 2)
		p = env.hits(tok, sparse, "jobResultId="+sparseResults[0])
		require.NotNil(t, p.Labels)
		require.Empty(t, *p.Labels)
		require.Len(t, *env.hits(tok, sparse, "jobResultId="+sparseResults[1]).Labels, 2)

		// Incomplete jobs: status only. Failed jobs: status and error.
		requireIncompleteJobHits(t, env, h)

		// Both account types; another account's job is NOT_FOUND, also
		// with a valid token of the owner.
		pjob, _ := h.recordJob(t, env.PolicyFirst.ID, domain.JobCompleted, 2)
		require.Len(t, *env.hits(env.PolicyFirst.Token, pjob, "").Labels, 2)
		other := env.newAccount("other", domain.AccountLabelFirst)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+big+"/labels", other.Token, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+big+"/labels?pageToken="+stk+"&jobResultId="+results[0], other.Token, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/"+pjob+"/labels", tok, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs/nope/labels", tok, ""), http.StatusNotFound, domain.NotFound)
	})
}

// Images: a HASH rule matches the image (an image hit), and an image the
// precheck rejects answers 499 with the precheck failure body, recording no
// job.
func TestEvaluateLabels_Images(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.LabelFirst.Token
		img := testPNG(t, "LABEL IMAGE")
		sum := md5.Sum(img)
		l := env.createLabel(tok, map[string]any{"name": "Known"})
		v := env.createVersion(tok, l.LabelId, map[string]any{"text": fmt.Sprintf(`HASH("md5:%s")`, hex.EncodeToString(sum[:]))})
		res := env.evaluate(tok, map[string]any{"contentData": map[string]any{"image": img}, "labelVersionIds": []string{v.LabelVersionId}})
		require.Equal(t, imaging.ContentHash(img), *res.ContentHash)
		r := res.Results[0]
		require.Nil(t, r.Error)
		require.Equal(t, client.OUTCOMETRUE, r.Evaluation.Outcome)
		p := env.hits(tok, *r.JobUuid, "")
		require.Len(t, *p.Labels, 1)
		require.Equal(t, client.MODALITYIMAGE, (*p.Labels)[0].Modality)
		other := testPNG(t, "SOMETHING ELSE")
		res = env.evaluate(tok, map[string]any{"contentData": map[string]any{"image": other}, "labelVersionIds": []string{v.LabelVersionId}})
		require.Equal(t, client.OUTCOMEFALSE, res.Results[0].Evaluation.Outcome)

		bad := testPNG(t, "KNOWN BAD")
		badSum := md5.Sum(bad)
		_, err := env.Main.Precheck.Import(ctx, "known", imaging.KindMD5, strings.NewReader(hex.EncodeToString(badSum[:])+"\n"))
		require.NoError(t, err)
		require.NoError(t, env.Main.Precheck.Reload(ctx))
		jobsBefore := len(decodeAs[client.ListJobsResponse](t, env.call(http.MethodGet, "/v1/jobs", tok, "")).Jobs)
		for _, tc := range []struct {
			name    string
			image   []byte
			failure domain.PrecheckFailureType
		}{
			{"hash list match", bad, domain.PrecheckFailureNCMEC},
			{"corrupt", []byte("\x89PNG\r\n\x1a\nbroken"), domain.PrecheckFailureInvalidImage},
		} {
			r := env.call(http.MethodPost, "/v1/labels/evaluate", tok, mustJSON(t, map[string]any{
				"contentData": map[string]any{"image": tc.image}, "labelVersionIds": []string{v.LabelVersionId}}))
			m := requireStatus(t, r, 499, domain.Canceled)
			d := m["details"].([]any)[0].(map[string]any)
			require.Equal(t, string(tc.failure), d["type"], tc.name)
		}
		require.Len(t, decodeAs[client.ListJobsResponse](t, env.call(http.MethodGet, "/v1/jobs", tok, "")).Jobs, jobsBefore, "no job for rejected content")
	})
}
