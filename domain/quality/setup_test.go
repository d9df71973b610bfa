package quality_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/quality"
	"github.com/contenteval/contenteval/persistence"
)

// bundle is the quality service on the real stores of one database, with
// the services that make what it measures (labels and their versions,
// label evaluations and feedback, policies and jobs) and two accounts:
// every test acts as mine and checks that other cannot see it. The job
// workers, which run dataset-run chunks and shadow evaluations, start only
// when a test calls startWorkers, so that what is queued can be looked at
// first.
type bundle struct {
	db          *persistence.DB
	quality     *quality.Service
	labels      *labels.Service
	eval        *labels.EvaluationService
	policies    *policies.Service
	jobs        *jobs.Service
	mine, other *domain.Account
}

// chunkSize is small so that the 20 examples of a run are evaluated by
// several chunk jobs.
const chunkSize = 3

func setup(t *testing.T, db *persistence.DB) *bundle {
	t.Helper()
	clock := domain.SystemClock{}
	tokens := paging.NewTokens([]byte("quality tests"))
	pols := policies.NewService(persistence.NewPolicies(db), clock, tokens, policies.Config{}, nil)
	js := jobs.NewService(persistence.NewJobs(db), pols, persistence.NewAccounts(db), clock, tokens,
		jobs.Config{PollInterval: 10 * time.Millisecond}, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		js.Shutdown(ctx)
	})
	b := &bundle{
		db:       db,
		labels:   labels.NewService(persistence.NewLabels(db), persistence.NewLabelVersions(db), persistence.NewLabelTags(db), clock, tokens),
		policies: pols,
		jobs:     js,
		eval: labels.NewEvaluationService(persistence.NewLabels(db), persistence.NewLabelVersions(db), persistence.NewJobs(db),
			persistence.NewFeedback(db), clock, tokens, labels.EvaluationConfig{}),
	}
	b.quality = quality.NewService(quality.Deps{
		Datasets: persistence.NewDatasets(db), Metrics: persistence.NewQualityMetrics(db), Shadows: persistence.NewShadows(db),
		JobStore: persistence.NewJobs(db), Labels: persistence.NewLabels(db), Versions: persistence.NewLabelVersions(db),
		Policies: pols, Jobs: js, Clock: clock, Tokens: tokens,
	}, quality.Config{ChunkSize: chunkSize})
	b.mine, b.other = newAccount(t, db, "mine"), newAccount(t, db, "other")
	return b
}

// startWorkers runs the job workers until the test ends.
func (b *bundle) startWorkers(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.jobs.RunWorkers(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func newAccount(t *testing.T, db *persistence.DB, name string) *domain.Account {
	t.Helper()
	now := domain.SystemClock{}.Now()
	a := &domain.Account{ID: domain.NewID(), Name: name, Type: domain.AccountLabelFirst,
		Limits: domain.Limits{RequestsPerSecond: 100, Burst: 100}, Created: now, Updated: now}
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(t.Context(), a))
	return a
}

// label creates a label of the account with a version of each text.
func (b *bundle) label(t *testing.T, account *domain.Account, name string, texts ...string) (*domain.Label, []*domain.LabelVersion) {
	t.Helper()
	l, err := b.labels.CreateLabel(t.Context(), account.ID, labels.NewLabel{Name: name})
	require.NoError(t, err)
	var vs []*domain.LabelVersion
	for _, text := range texts {
		v, err := b.labels.CreateLabelVersion(t.Context(), account.ID, l.ID, labels.NewLabelVersion{Text: text})
		require.NoError(t, err)
		vs = append(vs, v)
	}
	return l, vs
}

// waitFor polls cond until it holds, failing t (with what) after 30 s.
// cond runs on the test's goroutine, so it may use require.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 30s", what)
		}
		<-tick.C
	}
}

func ptr[T any](v T) *T { return &v }

func text(s string) domain.ContentInput { return domain.ContentInput{Text: &s} }
