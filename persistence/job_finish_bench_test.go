package persistence_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// BenchmarkCreateFinishedJobShadow prices what a shadow version adds to the
// write of a synchronous job (the fast path): the shadow job, a row more
// in the same INSERT (go test -run '^$' -bench CreateFinishedJobShadow).
func BenchmarkCreateFinishedJobShadow(b *testing.B) {
	for _, backend := range persistencetest.Backends(b) {
		for _, shadow := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/shadow=%v", backend.Name, shadow), func(b *testing.B) {
				db := backend.Open(b)
				ctx := b.Context()
				require.NoError(b, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
				store := persistence.NewJobs(db)
				rep := &rules.Report{Result: rules.OutcomeTrue}
				for i := range 20 {
					rep.Sections = append(rep.Sections, rules.SectionReport{Name: fmt.Sprintf("label-%02d", i), Result: rules.OutcomeFalse,
						Assertions: []rules.AssertionReport{{Result: rules.OutcomeFalse, Message: `=("forbidden phrase")`}}})
				}
				rep.Sections[7].Result = rules.OutcomeTrue
				text := strings.Repeat("lorem ipsum ", 90)
				b.ResetTimer()
				for i := range b.N {
					done := t0.Add(time.Second)
					j := &domain.Job{ID: fmt.Sprintf("job-%07d", i), AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
						PolicyID: "p", PolicyVersionID: "v1", Threshold: 0.5, Created: t0, Updated: t0, Completed: &done,
						Input: []domain.ContentItem{{Kind: domain.ContentText, Text: text}}}
					results := []*domain.JobResult{{ID: j.ID + "-r", JobID: j.ID, Report: rep, Created: t0}}
					if shadow {
						j.Then = []*domain.Job{{ID: j.ID + "-s", AccountID: "a1", Type: domain.JobTypeShadow, Status: domain.JobPending,
							PolicyID: "p", PolicyVersionID: "v2", Threshold: 0.5, Created: t0, Updated: t0,
							Options: map[string]string{domain.ShadowOfOption: j.ID, domain.ShadowActiveOption: jobs.EncodeShadowActive(results)}}}
					}
					require.NoError(b, store.CreateFinishedJob(ctx, j, results, nil))
				}
			})
		}
	}
}
