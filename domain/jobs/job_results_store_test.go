package jobs_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// A synchronous job of large reports (300 labels that all match, every
// rule with its spans) stores its results as it goes instead of holding
// them: it answers with ResultsStored and no results, and EachResult reads
// back every report whole, in entry order, with every hit stored. A job of
// small reports holds its results as before.
func TestJobServiceStoresLargeResultsAsItGoes(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		f := newJobsFixture(t, db)
		ctx := t.Context()
		var policy strings.Builder
		for i := range 300 {
			fmt.Fprintf(&policy, "LABEL \"L%03d\" {\n  ANY(=(\"lorem\"), =(\"ipsum\"))\n}\n", i)
		}
		pol, _, err := f.policies.Create(ctx, f.account, "many", policy.String())
		require.NoError(t, err)
		long := strings.Repeat("lorem ipsum ", 1000) // past the fast path with 6 items
		cases := []struct {
			name     string
			policy   string
			text     string
			stored   bool
			sections int
		}{
			{"large reports", pol.ID, long, true, 300},
			{"small reports", f.policy, strings.Repeat("kill ", 2500), false, 1},
		}
		for _, tc := range cases {
			content := make([]domain.ContentInput, 6)
			for i := range content {
				content[i] = text(tc.text)
			}
			j, err := f.jobs.Submit(ctx, f.account, jobs.Request{PolicyID: tc.policy, Content: content, Wait: true})
			require.NoError(t, err, tc.name)
			require.Equal(t, domain.JobCompleted, j.Status, tc.name)
			require.Equal(t, tc.stored, j.ResultsStored, tc.name)
			if tc.stored {
				require.Nil(t, j.Results, tc.name)
			} else {
				require.Len(t, j.Results, 6, tc.name)
			}
			var got []*domain.JobResult
			require.NoError(t, f.jobs.EachResult(ctx, j.ID, func(r *domain.JobResult) error {
				got = append(got, r)
				return nil
			}))
			require.Len(t, got, 6, tc.name)
			for i, r := range got {
				require.Equal(t, i, r.Index, tc.name)
				require.Equal(t, rules.OutcomeTrue, r.Report.Result, tc.name)
				require.Len(t, r.Report.Sections, tc.sections, tc.name)
			}
			hits, err := f.store.ListLabelHits(ctx, j.ID, "", -1, 10000)
			require.NoError(t, err)
			require.Len(t, hits, 6*tc.sections, tc.name)
		}
	})
}
