package grpcapi

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// requireGolden compares m with testdata/name (protojson), or rewrites the
// file with -update. Messages are compared, not text: protojson's spacing
// is deliberately unstable.
func requireGolden(t *testing.T, name string, m proto.Message) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		b, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./grpcapi -run %s -update", t.Name())
	want := m.ProtoReflect().New().Interface()
	require.NoError(t, protojson.Unmarshal(b, want))
	if !proto.Equal(want, m) {
		got, _ := protojson.MarshalOptions{Multiline: true}.Marshal(m)
		t.Fatalf("%s differs; got:\n%s", path, got)
	}
}

func TestToPBJob(t *testing.T) {
	created := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	done := created.Add(2 * time.Second)
	j := &domain.Job{
		ID: "job-1", AccountID: "acct-1", Type: domain.JobTypeStandard, Status: domain.JobCompleted,
		PolicyID: "pol-1", PolicyKey: "moderation", PolicyVersionID: "ver-1", Threshold: 0.5, Expedited: true,
		Contents: []domain.ContentSummary{{ContentHash: "sha256::aa", Metadata: map[string]string{"ref": "1"}}, {ContentHash: "sha256::bb"}},
		Created:  created, Updated: done, Completed: &done,
		Results: []*domain.JobResult{
			{ID: "res-1", JobID: "job-1", ContentHash: "sha256::aa", Metadata: map[string]string{"ref": "1"}, Created: done, Report: &rules.Report{
				Result: rules.OutcomeTrue, Threshold: 0.5, LabelMatches: map[string]float64{"Threat": 0.9},
				TokenUsage: rules.TokenUsage{InputTokens: 12, BilledTokens: 24, Multiplier: 2},
				Sections: []rules.SectionReport{
					{Name: "Threat", Message: "remove", Result: rules.OutcomeTrue, Score: 0.9,
						Assertions: []rules.AssertionReport{{Result: rules.OutcomeTrue, Message: `"threat of violence"`, Score: 0.9}},
						Review:     rules.ReviewResult{Outcome: rules.OutcomeTrue, Score: 0.9}},
					// No review result from the engine: the section's own.
					{Name: "Spam", Message: "review", Result: rules.OutcomeFailed, Score: -1,
						Assertions: []rules.AssertionReport{{Result: rules.OutcomeFailed, Message: `QUESTION("is it spam?")`, Score: -1}},
						Exception: &rules.ExceptionReport{Result: rules.OutcomeFalse,
							Assertions: []rules.AssertionReport{{Result: rules.OutcomeFalse, Message: `"news"`}}}},
				},
				Exception: &rules.ExceptionReport{Result: rules.OutcomeFalse, Review: rules.ReviewResult{Outcome: rules.OutcomeFalse}},
			}},
			// An entry that failed has no report; it still gets one.
			{ID: "res-2", JobID: "job-1", ContentHash: "sha256::bb", Created: done, Error: &domain.ErrJobNoMedia},
		},
	}
	got := toPBJob(j)
	requireGolden(t, "job.golden.json", got)
	for _, r := range got.Results {
		require.NotNil(t, r.Report.ReviewResult, "the Go SDK reads it without a nil check")
		for _, s := range r.Report.SectionEvaluationReports {
			require.NotNil(t, s.ReviewResult)
		}
	}

	// An unfinished job carries basic fields only; a label evaluation job
	// names its label instead of a policy.
	j.Status, j.Completed, j.PolicyID, j.LabelID, j.LabelVersionID = domain.JobRunning, nil, "", "lab-1", "lv-1"
	got = toPBJob(j)
	require.Nil(t, got.Results)
	require.Nil(t, got.Completed)
	require.Nil(t, got.PolicyId)
	require.Equal(t, "lab-1", got.GetLabelId())
	require.Equal(t, pb.JobStatus_JOB_STATUS_RUNNING, got.Status)
}

func TestToDomainFilter(t *testing.T) {
	zero := timestamppb.New(time.Time{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f, err := toDomainFilter(&pb.ListJobsRequest_Query{
		CreatedTimeRange:   &pb.TimeRange{Start: zero, End: zero},
		UpdatedTimeRange:   &pb.TimeRange{Start: timestamppb.New(at), Inclusive: true},
		CompletedTimeRange: &pb.TimeRange{End: timestamppb.New(at)},
		Status:             pb.JobStatus_JOB_STATUS_FAILED, PolicyId: proto.String("p"),
	})
	require.NoError(t, err)
	require.Equal(t, domain.JobFilter{
		Status: domain.JobFailed, PolicyID: "p",
		Updated:   domain.TimeRange{Start: &at, Inclusive: true},
		Completed: domain.TimeRange{End: &at},
	}, f, "the Go SDK's zero ranges are open")

	f, err = toDomainFilter(&pb.ListJobsRequest_Query{Status: pb.JobStatus(42)})
	require.NoError(t, err)
	require.Equal(t, domain.JobFilter{}, f, "an unknown status filters nothing, as in REST")
}
