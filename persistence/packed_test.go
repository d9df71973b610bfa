package persistence_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// prePackedVersion is the last migration before inputs and reports were
// stored packed.
const prePackedVersion = 111

// bigReport is a report of many sections, as a large policy writes.
func bigReport(sections int) *rules.Report {
	r := &rules.Report{Result: rules.OutcomeTrue, Threshold: 0.5, LabelMatches: map[string]float64{"label-3": 1}}
	for i := range sections {
		r.Sections = append(r.Sections, rules.SectionReport{
			Name: "label-" + strings.Repeat("x", i%7), Message: "review", Result: rules.OutcomeFalse,
			Assertions: []rules.AssertionReport{{Result: rules.OutcomeFalse, Message: `=("forbidden phrase")`},
				{Result: rules.OutcomeFalse, Message: `"violent threat" (lexical match)`}},
			Review: rules.ReviewResult{Outcome: rules.OutcomeFalse},
		})
	}
	return r
}

// A job's input and a result's report are stored packed, in a fraction of
// their JSON's bytes, with the JSON text columns left empty, and read back
// whole on every path that reads them (GetJob, a claim, the results).
func TestJobs_InputAndReportStoredPacked(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, packedRoundTrip)
	t.Run("postgres text parameters", func(t *testing.T) {
		t.Parallel()
		packedRoundTrip(t, persistencetest.OpenPostgres(t, url.Values{"binary_parameters": {"no"}}))
	})
}

func packedRoundTrip(t *testing.T, db *persistence.DB) {
	t.Helper()
	b := setupJobs(t, db)
	ctx := t.Context()
	text := strings.Repeat("some words of an ordinary post, then more of them; ", 40)
	j := completedJob("packed", b.account.ID)
	j.Input = []domain.ContentItem{{Kind: domain.ContentText, Text: text, Metadata: map[string]string{"k": "v"}}}
	report := bigReport(20)
	results := []*domain.JobResult{{ID: "packed-r", JobID: "packed", ContentHash: "sha256::1", Report: report, Created: t0.Add(time.Second)},
		{ID: "packed-e", JobID: "packed", Index: 1, Created: t0.Add(time.Second),
			Error: &domain.JobError{Reason: domain.JobErrorReason("X"), Message: "no report"}}}
	require.NoError(t, b.jobs.CreateFinishedJob(ctx, j, results, nil))

	var row struct {
		Input  string `db:"input"`
		Packed int    `db:"packed"`
	}
	require.NoError(t, db.GetContext(ctx, &row, `SELECT input, length(input_packed) AS packed FROM jobs WHERE id = 'packed'`))
	require.Empty(t, row.Input)
	require.Less(t, row.Packed, len(text)/4)
	var reports []struct {
		Report string `db:"report"`
		Packed *int   `db:"packed"`
	}
	require.NoError(t, db.SelectContext(ctx, &reports, `SELECT report, length(report_packed) AS packed FROM job_results WHERE job_id = 'packed' ORDER BY seq`))
	require.Len(t, reports, 2)
	require.Empty(t, reports[0].Report)
	require.NotNil(t, reports[0].Packed)
	require.Less(t, *reports[0].Packed, 400)
	require.Nil(t, reports[1].Packed, "a result without a report stores none")

	got, err := b.jobs.GetJob(ctx, b.account.ID, "packed")
	require.NoError(t, err)
	require.Equal(t, j.Input, got.Input)
	rs, err := b.jobs.ListJobResults(ctx, "packed")
	require.NoError(t, err)
	require.Len(t, rs, 2)
	require.Equal(t, report, rs[0].Report)
	require.Nil(t, rs[1].Report)

	q := b.newJob(t, "queued", t0, false)
	claimed, err := b.jobs.ClaimJobs(ctx, "w", t0.Add(time.Second), t0.Add(time.Minute), 1, 1)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, q.Input, claimed[0].Input)
}

// A database holding jobs and results written before inputs and reports
// were packed reads them after the migration, as JSON text.
func TestJobs_MigratedUnpackedRowsStillRead(t *testing.T) {
	t.Parallel()
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := b.OpenUnmigrated(t)
			require.NoError(t, db.MigrateTo(ctx, prePackedVersion))
			exec := func(q string, args ...any) {
				t.Helper()
				_, err := db.ExecContext(ctx, db.Rebind(q), args...)
				require.NoError(t, err)
			}
			now := time.Now().UTC().Truncate(time.Second)
			exec(`INSERT INTO accounts (id, name, type, created, updated) VALUES ('a', 'a', 'policy-first', ?, ?)`, now, now)
			id := uuidV7At(now)
			exec(`INSERT INTO jobs (id, account_id, job_type, status, threshold, input, created, updated)
				VALUES (?, 'a', 'JOB_TYPE_STANDARD', 'completed', 0.5, '[{"kind":"text","text":"old text"}]', ?, ?)`, id, now, now)
			exec(`INSERT INTO job_results (id, job_id, seq, content_hash, report, created)
				VALUES (?, ?, 0, 'sha256::00', '{"Result":"OUTCOME_TRUE","LabelMatches":{"A":1},"Threshold":0.5}', ?)`, id+"-r", id, now)
			require.NoError(t, db.Migrate(ctx))

			jobs := persistence.NewJobs(db)
			j, err := jobs.GetJob(ctx, "a", id)
			require.NoError(t, err)
			require.Equal(t, []domain.ContentItem{{Kind: domain.ContentText, Text: "old text"}}, j.Input)
			rs, err := jobs.ListJobResults(ctx, id)
			require.NoError(t, err)
			require.Len(t, rs, 1)
			require.Equal(t, &rules.Report{Result: rules.OutcomeTrue, LabelMatches: map[string]float64{"A": 1}, Threshold: 0.5}, rs[0].Report)
		})
	}
}
