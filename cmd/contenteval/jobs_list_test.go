package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/stretchr/testify/require"
)

func TestListJobs(t *testing.T) {
	// Role api: no queue workers, so asynchronous jobs stay pending.
	forEachBackend(t, func(c *Config) { c.Role = "api" }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		pf := env.PolicyFirst.Token
		c := env.Client(pf)
		p1 := env.createPolicy(pf, "one")
		p2 := env.createPolicy(pf, "two")
		t0 := env.Clock.Now()
		at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
		text := []client.ContentData{textItem("hi", nil)}
		env.Clock.Add(time.Minute) // A at t0+1m: completed, p1
		a := env.submit(pf, client.CreateJobRequest{PolicyId: p1, WaitForCompletion: ptr(true), ContentData: text})
		env.Clock.Add(time.Minute) // B at t0+2m: completed, p2
		b := env.submit(pf, client.CreateJobRequest{PolicyId: p2, WaitForCompletion: ptr(true), ContentData: text})
		env.Clock.Add(time.Minute) // C at t0+3m: pending, p1
		cj := env.submit(pf, client.CreateJobRequest{PolicyId: p1, ContentData: text})
		env.Clock.Add(time.Minute) // D at t0+4m: failed, p1
		d := env.submit(pf, client.CreateJobRequest{PolicyId: p1, Expedited: ptr(true), ContentData: text})
		// Fail D as a worker would (expedited: it is claimed before C).
		store := persistence.NewJobs(env.Main.DB)
		claimed, err := store.ClaimJobs(ctx, "test", env.Clock.Now(), env.Clock.Now().Add(time.Minute), 1, 0)
		require.NoError(t, err)
		require.Equal(t, d.JobUuid, claimed[0].ID)
		require.NoError(t, store.FinishJob(ctx, d.JobUuid, "test", domain.JobFailed, env.Clock.Now(), &domain.ErrJobInternal, nil, nil))
		// Another account's job never shows.
		other := env.newAccount("other", domain.AccountPolicyFirst)
		env.submit(other.Token, client.CreateJobRequest{PolicyId: env.createPolicy(other.Token, "x"), ContentData: text})

		ids := func(p client.ListJobsParams) []string { return listJobIDs(t, c, p) }
		A, B, C, D := a.JobUuid, b.JobUuid, cj.JobUuid, d.JobUuid
		st := func(s client.JobStatus) *client.JobStatus { return &s }
		for _, tc := range []struct {
			name string
			p    client.ListJobsParams
			want []string
		}{
			{"all, newest first", client.ListJobsParams{}, []string{D, C, B, A}},
			{"status completed", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSCOMPLETED)}, []string{B, A}},
			{"status pending", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSPENDING)}, []string{C}},
			{"status failed", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSFAILED)}, []string{D}},
			{"status running", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSRUNNING)}, []string{}},
			{"status unspecified", client.ListJobsParams{QueryStatus: st(client.JOBSTATUSUNSPECIFIED)}, []string{D, C, B, A}},
			{"policy", client.ListJobsParams{QueryPolicyId: &p2}, []string{B}},
			{"policy and status", client.ListJobsParams{QueryPolicyId: &p1, QueryStatus: st(client.JOBSTATUSCOMPLETED)}, []string{A}},
			{"created exclusive", client.ListJobsParams{QueryCreatedTimeRangeStart: ptr(at(2)), QueryCreatedTimeRangeEnd: ptr(at(4))}, []string{C}},
			{"created inclusive", client.ListJobsParams{QueryCreatedTimeRangeStart: ptr(at(2)), QueryCreatedTimeRangeEnd: ptr(at(4)), QueryCreatedTimeRangeInclusive: ptr(true)}, []string{D, C, B}},
			{"created open end", client.ListJobsParams{QueryCreatedTimeRangeStart: ptr(at(3))}, []string{D}},
			{"created open start", client.ListJobsParams{QueryCreatedTimeRangeEnd: ptr(at(2)), QueryCreatedTimeRangeInclusive: ptr(true)}, []string{B, A}},
			{"updated", client.ListJobsParams{QueryUpdatedTimeRangeStart: ptr(at(1)), QueryUpdatedTimeRangeEnd: ptr(at(3)), QueryUpdatedTimeRangeInclusive: ptr(true)}, []string{C, B, A}},
			{"completed", client.ListJobsParams{QueryCompletedTimeRangeStart: ptr(at(2)), QueryCompletedTimeRangeInclusive: ptr(true)}, []string{D, B}},
			{"completed excludes unfinished", client.ListJobsParams{QueryCompletedTimeRangeEnd: ptr(at(9))}, []string{D, B, A}},
			{"page size 0 is 10", client.ListJobsParams{PageSize: ptr(int32(0))}, []string{D, C, B, A}},
			{"page size 1000", client.ListJobsParams{PageSize: ptr(int32(1000))}, []string{D, C, B, A}},
			{"page size above the cap", client.ListJobsParams{PageSize: ptr(int32(5000))}, []string{D, C, B, A}},
		} {
			t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, ids(tc.p)) })
		}

		// Paging one at a time walks every job once, in order.
		walked, tokens := walkJobPages(t, c)
		require.Equal(t, []string{D, C, B, A}, walked)
		require.Len(t, tokens, 3, "no token after the last page")
		// Exactly a page's worth: no token on the full last page.
		r, err := c.ListJobsWithResponse(ctx, &client.ListJobsParams{PageSize: ptr(int32(2)), PageToken: &tokens[1]})
		require.NoError(t, err)
		require.Len(t, r.JSON200.Jobs, 2)
		require.Nil(t, r.JSON200.NextPageToken)

		// Tokens are bound to the filters and the account.
		requireTokenBound(t, env, tokens[0], pf, p1, other.Token)
		// A different page size is not a different request.
		raw := env.call(http.MethodGet, "/v1/jobs?pageSize=3&pageToken="+tokens[0], pf, "")
		require.Equal(t, http.StatusOK, raw.Status, "%s", raw.Body)
		raw = env.call(http.MethodGet, "/v1/jobs?pageSize=-1", pf, "")
		m := requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "pageSize")

		// The default page size is 10.
		for range 8 {
			env.submit(pf, client.CreateJobRequest{PolicyId: p1, ContentData: text})
		}
		r, err = c.ListJobsWithResponse(ctx, &client.ListJobsParams{})
		require.NoError(t, err)
		require.Len(t, r.JSON200.Jobs, 10)
		require.NotNil(t, r.JSON200.NextPageToken)
		r, err = c.ListJobsWithResponse(ctx, &client.ListJobsParams{PageToken: r.JSON200.NextPageToken})
		require.NoError(t, err)
		require.Len(t, r.JSON200.Jobs, 2)
		require.Nil(t, r.JSON200.NextPageToken)
	})
}

// listJobIDs lists the jobs p selects, in one page, and checks each is as
// GET /v1/jobs/{jobUuid} gives it (an incomplete one with basic fields only).
func listJobIDs(t *testing.T, c *client.ClientWithResponses, p client.ListJobsParams) []string {
	t.Helper()
	ctx := context.Background()
	r, err := c.ListJobsWithResponse(ctx, &p)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	specChecked(t, r.HTTPResponse, r.Body)
	require.Nil(t, r.JSON200.NextPageToken)
	out := []string{}
	for _, j := range r.JSON200.Jobs {
		if j.Status != client.JOBSTATUSCOMPLETED {
			require.Nil(t, j.Results, "an incomplete job carries basic fields only")
		} else {
			// As GET /v1/jobs/{jobUuid} gives it, results included.
			require.NotNil(t, j.Results, "a complete job carries its results")
			require.Len(t, *j.Results, len(j.ContentData))
			got, err := c.GetJobWithResponse(ctx, j.JobUuid)
			require.NoError(t, err)
			require.Equal(t, got.JSON200.Job, j)
		}
		out = append(out, j.JobUuid)
	}
	return out
}

// walkJobPages lists the jobs one per page, and returns them and the page
// tokens it was given.
func walkJobPages(t *testing.T, c *client.ClientWithResponses) (walked, tokens []string) {
	t.Helper()
	var token *string
	for {
		r, err := c.ListJobsWithResponse(context.Background(), &client.ListJobsParams{PageSize: ptr(int32(1)), PageToken: token})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		for _, j := range r.JSON200.Jobs {
			walked = append(walked, j.JobUuid)
		}
		token = r.JSON200.NextPageToken
		if token == nil {
			return walked, tokens
		}
		tokens = append(tokens, *token)
	}
}

// requireTokenBound checks that the page token of an unfiltered listing
// by token (whose policy p1 there is) is refused with other filters or by
// another account.
func requireTokenBound(t *testing.T, env *testEnv, pageToken, token, p1, otherToken string) {
	t.Helper()
	for _, tc := range []struct{ name, path, token string }{
		{"other filter", "/v1/jobs?pageSize=1&query.status=JOB_STATUS_PENDING&pageToken=" + pageToken, token},
		{"other policy filter", "/v1/jobs?pageSize=1&query.policyId=" + p1 + "&pageToken=" + pageToken, token},
		{"other range", "/v1/jobs?pageSize=1&query.createdTimeRange.inclusive=true&pageToken=" + pageToken, token},
		{"other account", "/v1/jobs?pageSize=1&pageToken=" + pageToken, otherToken},
		{"garbage", "/v1/jobs?pageToken=abc.def", token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := callT(t, env, http.MethodGet, tc.path, tc.token, "")
			m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
			require.Contains(t, fieldViolations(t, m), "pageToken")
		})
	}
}

// view=JOB_VIEW_BASIC lists every job without its results, and otherwise
// as the full view does; unset and JOB_VIEW_UNSPECIFIED are the full view.
func TestListJobsView(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.Role = "api" }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		pf := env.PolicyFirst.Token
		c := env.Client(pf)
		p := env.createPolicy(pf, "one")
		text := []client.ContentData{textItem("hi", nil)}
		done := env.submit(pf, client.CreateJobRequest{PolicyId: p, WaitForCompletion: ptr(true), ContentData: text})
		require.Equal(t, client.JOBSTATUSCOMPLETED, done.Status)
		env.Clock.Add(time.Minute)
		env.submit(pf, client.CreateJobRequest{PolicyId: p, ContentData: text}) // pending

		list := func(view *client.JobView) []client.Job {
			r, err := c.ListJobsWithResponse(ctx, &client.ListJobsParams{View: view})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			specChecked(t, r.HTTPResponse, r.Body)
			require.Len(t, r.JSON200.Jobs, 2)
			return r.JSON200.Jobs
		}
		view := func(v client.JobView) *client.JobView { return &v }
		full := list(nil)
		require.NotNil(t, full[1].Results, "the full view gives a complete job its results")
		require.Equal(t, full, list(view(client.JOBVIEWFULL)))
		require.Equal(t, full, list(view(client.JOBVIEWUNSPECIFIED)))
		basic := list(view(client.JOBVIEWBASIC))
		for i := range full {
			require.Nil(t, basic[i].Results, "the basic view gives no job its results")
			want := full[i]
			want.Results = nil
			require.Equal(t, want, basic[i])
		}

		raw := env.call(http.MethodGet, "/v1/jobs?view=JOB_VIEW_ALL", pf, "")
		m := requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "view")
	})
}
