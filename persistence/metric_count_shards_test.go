package persistence_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// TestMetricCounts_WritersOfOneVersionDoNotQueue: two transactions adding
// to the same version's counts of the same hour, each still open, do not
// wait for each other when they write different shards (a writer picks
// one at random, so that concurrent job completions of one version rarely
// share a row); on the same shard the second waits for the first's commit,
// which is what the shards avoid. Readers see the sum of the shards.
func TestMetricCounts_WritersOfOneVersionDoNotQueue(t *testing.T) {
	t.Parallel()
	db := persistencetest.Open(t, persistencetest.Postgres)
	ctx := t.Context()
	now := time.Now().UTC()
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount("a", now.Add(-day))))

	begin := func() *sqlx.Tx {
		t.Helper()
		tx, err := db.BeginTxx(ctx, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = tx.Rollback() })
		_, err = tx.ExecContext(ctx, `SET LOCAL lock_timeout = '200ms'`)
		require.NoError(t, err)
		return tx
	}
	first := begin()
	require.NoError(t, persistence.AddEvaluationCount(ctx, db, first, "a", "v1", now, 0))
	second := begin()
	require.NoError(t, persistence.AddEvaluationCount(ctx, db, second, "a", "v1", now, 1), "a writer of another shard waited")
	same := begin()
	err := persistence.AddEvaluationCount(ctx, db, same, "a", "v1", now, 0)
	require.Equal(t, domain.Unavailable, domain.ErrorCode(persistence.TranslateError(err)), "a writer of the same shard did not wait for the lock: %v", err)
	require.NoError(t, first.Commit())
	require.NoError(t, second.Commit())

	for _, window := range [][2]*time.Time{{nil, nil}, {ptr(now.Truncate(time.Hour)), ptr(now.Truncate(time.Hour).Add(time.Hour))}} {
		m, err := persistence.NewQualityMetrics(db).VersionMetrics(context.WithoutCancel(ctx),
			domain.MetricsQuery{AccountID: "a", PolicyVersionID: "v1", Since: window[0], Until: window[1], Labels: []string{"L"}})
		require.NoError(t, err)
		require.Len(t, m, 1)
		require.Equal(t, 2, m[0].Evaluations, "the shards' evaluations are summed (window %v)", window)
	}
}
