package labels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/persistence"
)

// bundle is the label services on the real stores of one database, with
// two label-first accounts: every test acts as mine and checks that
// theirs cannot see it.
type bundle struct {
	labels      *labels.Service
	eval        *labels.EvaluationService
	jobs        *persistence.Jobs
	mine, other *domain.Account
}

func setup(t *testing.T, db *persistence.DB) *bundle {
	t.Helper()
	clock := domain.SystemClock{}
	tokens := paging.NewTokens([]byte("label tests"))
	b := &bundle{
		labels: labels.NewService(persistence.NewLabels(db), persistence.NewLabelVersions(db), persistence.NewLabelTags(db), clock, tokens),
		eval: labels.NewEvaluationService(persistence.NewLabels(db), persistence.NewLabelVersions(db), persistence.NewJobs(db),
			persistence.NewFeedback(db), clock, tokens, labels.EvaluationConfig{HitRanges: persistence.NewLabelHits(db)}),
		jobs: persistence.NewJobs(db),
	}
	b.mine, b.other = newAccount(t, db, "mine"), newAccount(t, db, "other")
	return b
}

func newAccount(t *testing.T, db *persistence.DB, name string) *domain.Account {
	t.Helper()
	now := domain.SystemClock{}.Now()
	a := &domain.Account{ID: domain.NewID(), Name: name, Type: domain.AccountLabelFirst,
		Limits: domain.Limits{RequestsPerSecond: 100, Burst: 100}, Created: now, Updated: now}
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(t.Context(), a))
	return a
}

// label creates a label of the account with one version of text.
func (b *bundle) label(t *testing.T, account *domain.Account, name, text string) (*domain.Label, *domain.LabelVersion) {
	t.Helper()
	l, err := b.labels.CreateLabel(t.Context(), account.ID, labels.NewLabel{Name: name})
	require.NoError(t, err)
	v, err := b.labels.CreateLabelVersion(t.Context(), account.ID, l.ID, labels.NewLabelVersion{Text: text})
	require.NoError(t, err)
	return l, v
}

func ptr[T any](v T) *T { return &v }

func text(s string) domain.ContentInput { return domain.ContentInput{Text: &s} }
