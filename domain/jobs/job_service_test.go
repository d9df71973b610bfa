package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// The job service on the real stores (both backends), below the HTTP layer:
// how each path (synchronous fast and slow, queued, streamed) ends a job
// through the item runner.

// stubImages answers every image with its verdict: an image (the bytes
// "ok"), a precheck rejection ("ncmec"), or it never answers ("slow")
// until its context ends.
type stubImages struct{}

func (stubImages) InspectImage(ctx context.Context, _, _ string, it domain.ContentItem, _ map[string]string) (*domain.InspectedImage, error) {
	switch string(it.Bytes) {
	case "ncmec":
		return nil, &domain.Error{Code: domain.Canceled, Message: "blocked",
			Details: []domain.Detail{domain.PrecheckFailure{Type: domain.PrecheckFailureNCMEC, Message: "blocked"}}}
	case "slow":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &domain.InspectedImage{ContentHash: "sha256::image", Text: "kill", OCR: true}, nil
}

type jobsFixture struct {
	jobs     *jobs.Service
	store    *persistence.Jobs
	policies *policies.Service
	account  *domain.Account
	policy   string
}

func newJobsFixture(t *testing.T, db *persistence.DB) *jobsFixture {
	t.Helper()
	ctx := t.Context()
	clock := domain.SystemClock{}
	tokens := paging.NewTokens([]byte("secret"))
	account := &domain.Account{ID: domain.NewID(), Name: "acme", Type: domain.AccountPolicyFirst,
		Limits: domain.Limits{RequestsPerSecond: 100, Burst: 100}, WebhookSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Created: clock.Now(), Updated: clock.Now()}
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, account))
	policies := policies.NewService(persistence.NewPolicies(db), clock, tokens, policies.Config{}, evaluation.NewPlans(10))
	p, _, err := policies.Create(ctx, account, "violence", `LABEL "Violence" { =("kill") }`)
	require.NoError(t, err)
	store := persistence.NewJobs(db)
	jobs := jobs.NewService(store, policies, persistence.NewAccounts(db), clock, tokens, jobs.Config{
		Images: stubImages{}, ItemDeadline: 300 * time.Millisecond, PollInterval: 10 * time.Millisecond,
	}, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		jobs.Shutdown(ctx)
	})
	return &jobsFixture{jobs: jobs, store: store, policies: policies, account: account, policy: p.ID}
}

func text(s string) domain.ContentInput { return domain.ContentInput{Text: &s} }

func image(b string) domain.ContentInput {
	bs := []byte(b)
	return domain.ContentInput{Image: &bs}
}

func TestJobServiceSynchronous(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		f := newJobsFixture(t, db)
		ctx := t.Context()
		tests := []struct {
			name       string
			content    []domain.ContentInput
			wantStatus domain.JobStatus
			wantReason domain.JobErrorReason
			wantCode   domain.Code // the request's error instead of a job
		}{
			{name: "text, fast path", content: []domain.ContentInput{text("I will kill you")}, wantStatus: domain.JobCompleted},
			{name: "image evaluated", content: []domain.ContentInput{text("hi"), image("ok")}, wantStatus: domain.JobCompleted},
			{name: "precheck rejection is the request's error", content: []domain.ContentInput{image("ncmec")}, wantCode: domain.Canceled},
			{name: "an item over its budget fails the job", content: []domain.ContentInput{text("hi"), image("slow")},
				wantStatus: domain.JobFailed, wantReason: domain.ReasonExecutionDeadlineExceeded},
		}
		for _, tc := range tests {
			j, err := f.jobs.Submit(ctx, f.account, jobs.Request{PolicyID: f.policy, Content: tc.content, Wait: true})
			if tc.wantCode != 0 {
				require.Equal(t, tc.wantCode, domain.ErrorCode(err), tc.name)
				continue
			}
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.wantStatus, j.Status, tc.name)
			stored, err := f.jobs.Get(ctx, f.account, j.ID)
			require.NoError(t, err, tc.name)
			require.Equal(t, tc.wantStatus, stored.Status, tc.name)
			if tc.wantReason != "" {
				require.Equal(t, tc.wantReason, stored.Error.Reason, tc.name)
				continue
			}
			require.Len(t, stored.Results, len(tc.content), tc.name)
			require.Equal(t, rules.OutcomeTrue, stored.Results[len(tc.content)-1].Report.Result, tc.name)
		}
	})
}

func TestJobServiceQueued(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		f := newJobsFixture(t, db)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); f.jobs.RunWorkers(ctx) }()
		t.Cleanup(func() { cancel(); <-done })

		want := map[string]domain.JobErrorReason{}
		for content, reason := range map[string]domain.JobErrorReason{
			"ok": "", "ncmec": domain.ReasonContentBlocked, "slow": domain.ReasonExecutionDeadlineExceeded,
		} {
			j, err := f.jobs.Submit(ctx, f.account, jobs.Request{PolicyID: f.policy, Content: []domain.ContentInput{image(content)}})
			require.NoError(t, err)
			require.Equal(t, domain.JobPending, j.Status)
			want[j.ID] = reason
		}
		for id, reason := range want {
			var j *domain.Job
			require.Eventually(t, func() bool {
				var err error
				j, err = f.jobs.Get(ctx, f.account, id)
				require.NoError(t, err)
				return j.Status.Terminal()
			}, 30*time.Second, 10*time.Millisecond)
			if reason == "" {
				require.Equal(t, domain.JobCompleted, j.Status)
				continue
			}
			require.Equal(t, domain.JobFailed, j.Status)
			require.Equal(t, reason, j.Error.Reason)
		}
	})
}

func TestJobServiceStream(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		f := newJobsFixture(t, db)
		ctx := t.Context()
		st, err := f.jobs.StartStream(ctx, f.account, jobs.Request{PolicyID: f.policy,
			Content: []domain.ContentInput{text("kill"), image("ncmec"), image("slow"), image("ok")}})
		require.NoError(t, err)
		var lines []jobs.StreamItem
		require.NoError(t, st.Run(ctx, func(it jobs.StreamItem) error {
			lines = append(lines, it)
			return nil
		}))
		require.Len(t, lines, 4, "every entry has its line, in order")
		for i, l := range lines {
			require.Equal(t, i, l.Index)
		}
		require.NotNil(t, lines[0].Result)
		require.Equal(t, domain.Canceled, lines[1].Err.Code, "the precheck's body")
		require.Equal(t, domain.DeadlineExceeded, lines[2].Err.Code, "the item's budget")
		require.NotNil(t, lines[3].Result, "the entries after a failed one still stream")
		j, err := f.jobs.Get(ctx, f.account, st.Job.ID)
		require.NoError(t, err)
		require.Equal(t, domain.JobFailed, j.Status)
	})
}
