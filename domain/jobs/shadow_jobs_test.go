package jobs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// A job's shadow sample is drawn once: by the request that runs it, or,
// for a queued job, by the worker that claims it; never at submission as
// well, where the draw would be thrown away with Then, which is not stored.
func TestShadowSampleDrawnOnce(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		f := newJobsFixture(t, db)
		rate := 1.0
		_, err := f.policies.AddVersionAs(t.Context(), f.account, f.policy, `LABEL "Violence" { =("hit") }`, domain.PolicyVersionShadow, &rate)
		require.NoError(t, err)
		for _, wait := range []bool{false, true} {
			j, err := f.jobs.Submit(t.Context(), f.account, jobs.Request{PolicyID: f.policy, Wait: wait, Content: []domain.ContentInput{text("hello")}})
			require.NoError(t, err)
			if !wait {
				require.Empty(t, j.Then, "a queued job's sample is the worker's to draw")
				continue
			}
			require.Equal(t, domain.JobCompleted, j.Status)
			require.Len(t, j.Then, 1, "a job the request runs draws its sample (rate 1) at once")
			require.Equal(t, domain.JobTypeShadow, j.Then[0].Type)
		}
	})
}

func TestShadowActiveRoundTrip(t *testing.T) {
	results := []*domain.JobResult{
		{ID: "r1", ContentHash: "sha256::a", Report: &rules.Report{Sections: []rules.SectionReport{
			{Name: "Spam", Result: rules.OutcomeTrue}, {Name: "Threat", Result: rules.OutcomeFalse}, {Name: "Scam", Result: rules.OutcomeFailed}}}},
		{ID: "r2", Report: &rules.Report{Sections: []rules.SectionReport{{Name: "Spam", Result: rules.OutcomeFalse}}}},
	}
	got, err := jobs.DecodeShadowActive(jobs.EncodeShadowActive(results))
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.ShadowActive{
		{ResultID: "r1", ContentHash: "sha256::a", Outcomes: map[string]rules.Outcome{"Spam": rules.OutcomeTrue, "Scam": rules.OutcomeFailed}},
		{ResultID: "r2"},
	}
	if len(got) != 2 || got[0].ResultID != "r1" || got[0].ContentHash != want[0].ContentHash || len(got[0].Outcomes) != 2 ||
		got[0].Outcomes["Spam"] != rules.OutcomeTrue || got[0].Outcomes["Scam"] != rules.OutcomeFailed || got[1].ResultID != "r2" || got[1].Outcomes != nil {
		t.Errorf("round trip: %+v, want %+v", got, want)
	}
}

// FuzzDecodeShadowActive: the option is read back from the database; a
// damaged one is an error, never a panic.
func FuzzDecodeShadowActive(f *testing.F) {
	f.Add(`[{"r":"r1","h":"sha256::a","o":{"Spam":"OUTCOME_TRUE"}}]`)
	f.Add(`[]`)
	f.Add(`{"r":1}`)
	f.Fuzz(func(t *testing.T, s string) {
		out, err := jobs.DecodeShadowActive(s)
		if err == nil {
			_ = jobs.EncodeShadowActive(nil)
			for _, a := range out {
				_ = a.Outcomes[a.ResultID]
			}
		}
	})
}
