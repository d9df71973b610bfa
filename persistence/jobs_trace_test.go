package persistence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/traces"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestJobTraceContext: a queued job keeps the trace context it was created
// with, checked and bounded, and the claim hands it to the worker when
// tracing is on.
func TestJobTraceContext(t *testing.T) {
	traces.SetEnabled(true)
	t.Cleanup(func() { traces.SetEnabled(false) })
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var members []string
	for i := range 32 {
		members = append(members, "k"+string(rune('a'+i%26))+strings.Repeat("0", i/26)+"="+strings.Repeat("v", 40))
	}
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		store := persistence.NewJobs(db)
		for _, tc := range []struct {
			id, parent, state     string
			wantParent, wantState string
		}{
			{id: "traced", parent: parent, state: "vendor=opaque", wantParent: parent, wantState: "vendor=opaque"},
			{id: "untraced"},
			{id: "malformed", parent: "00-not-a-trace-context", state: "vendor=opaque"},
			{id: "bad-state", parent: parent, state: "not a list", wantParent: parent},
			{id: "long-state", parent: parent, state: strings.Join(members, ","), wantParent: parent,
				wantState: strings.Join(members[:11], ",")},
		} {
			require.NoError(t, store.CreateJob(ctx, &domain.Job{
				ID: tc.id, AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobPending, Threshold: 0.5,
				Created: t0, Updated: t0, TraceParent: tc.parent, TraceState: tc.state,
			}))
			claimed, err := store.ClaimJobs(ctx, "w", t0, t0.Add(time.Minute), 1, 10)
			require.NoError(t, err)
			require.Len(t, claimed, 1, tc.id)
			require.Equal(t, tc.id, claimed[0].ID)
			require.Equal(t, [2]string{tc.wantParent, tc.wantState}, [2]string{claimed[0].TraceParent, claimed[0].TraceState}, tc.id)
			require.NoError(t, store.FinishJob(ctx, tc.id, "w", domain.JobCompleted, t0, nil, nil, nil))
		}
	})
}

// TestJobTraceContextOff: with tracing off, a job is queued and claimed
// without a trace context whatever the context of the request.
func TestJobTraceContextOff(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a1", t0)))
		store := persistence.NewJobs(db)
		require.NoError(t, store.CreateJob(ctx, &domain.Job{
			ID: "j", AccountID: "a1", Type: domain.JobTypeStandard, Status: domain.JobPending, Threshold: 0.5,
			Created: t0, Updated: t0,
		}))
		claimed, err := store.ClaimJobs(ctx, "w", t0, t0.Add(time.Minute), 1, 10)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		require.Empty(t, claimed[0].TraceParent+claimed[0].TraceState)
	})
}
