package quality

import (
	"context"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/rules"
)

// Options of a dataset run's chunk jobs: the run, and the items [from, to)
// the chunk evaluates.
const (
	optRun  = "datasetRunId"
	optFrom = "from"
	optTo   = "to"
)

// Page sizes of the run listings.
const (
	defaultRunsPage    = 100
	defaultResultsPage = 100
	defaultChangesPage = 1000
	maxRunPage         = 1000
)

// CreateRun queues a run of a label version over the label's examples, as
// they are now. threshold 0 (or unset) takes the version's threshold, else
// 0.5. Codes: NOT_FOUND (label, version), INVALID_ARGUMENT (threshold),
// FAILED_PRECONDITION (too many runs of the label pending or running).
func (s *Service) CreateRun(ctx context.Context, account *domain.Account, labelID, versionID string, threshold *float64) (*domain.DatasetRun, error) {
	if t := threshold; t != nil && (*t < 0 || *t > 1 || *t != *t) {
		return nil, domain.InvalidField("threshold", "must be between 0 and 1")
	}
	v, err := s.d.Versions.GetLabelVersion(ctx, account.ID, labelID, versionID)
	if err != nil {
		return nil, domain.DescribeNotFound(err, "label version %q of label %q not found", versionID, labelID)
	}
	t := rules.DefaultThreshold
	for _, c := range []*float64{threshold, v.EvalOptions.Threshold} {
		if c != nil && *c > 0 {
			t = *c
			break
		}
	}
	now := s.d.Clock.Now()
	run := &domain.DatasetRun{ID: domain.NewID(), AccountID: account.ID, LabelID: labelID, LabelVersionID: v.ID,
		State: domain.DatasetRunPending, Threshold: t, Created: now, Updated: now}
	chunkJob := func(from, to int) *domain.Job {
		return &domain.Job{
			ID: domain.NewIDAt(now), AccountID: account.ID, Type: domain.JobTypeDatasetRun, Status: domain.JobPending,
			LabelID: labelID, LabelVersionID: v.ID, Threshold: t,
			Options: map[string]string{optRun: run.ID, optFrom: strconv.Itoa(from), optTo: strconv.Itoa(to)},
			Input:   []domain.ContentItem{}, Contents: []domain.ContentSummary{}, Created: now, Updated: now,
		}
	}
	if err := s.d.Datasets.CreateDatasetRun(ctx, run, s.cfg.ChunkSize, domain.MaxActiveDatasetRuns, chunkJob); err != nil {
		return nil, domain.DescribeNotFound(err, "label %q not found", labelID)
	}
	if s.d.Jobs != nil {
		s.d.Jobs.Notify()
	}
	return run, nil
}

// GetRun returns a run of a label. Codes: NOT_FOUND.
func (s *Service) GetRun(ctx context.Context, account *domain.Account, labelID, id string) (*domain.DatasetRun, error) {
	return s.d.Datasets.GetDatasetRun(ctx, account.ID, labelID, id)
}

// ListRuns returns a page of a label's runs, newest first. Codes:
// NOT_FOUND (label), INVALID_ARGUMENT (page size or token).
func (s *Service) ListRuns(ctx context.Context, account *domain.Account, labelID string, pageSize *int32, pageToken string) ([]*domain.DatasetRun, string, error) {
	q := paging.Query{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: defaultRunsPage, Max: maxRunPage, Scope: "datasetRuns\x00" + account.ID + "\x00" + labelID}
	check := func() error {
		_, err := s.d.Labels.GetLabel(ctx, account.ID, labelID)
		return domain.DescribeNotFound(err, "label %q not found", labelID)
	}
	return paging.Keyset(s.d.Tokens, q, check, func(after *domain.DatasetRunCursor, limit int) ([]*domain.DatasetRun, error) {
		return s.d.Datasets.ListDatasetRuns(ctx, account.ID, labelID, after, limit)
	}, func(r *domain.DatasetRun) domain.DatasetRunCursor {
		return domain.DatasetRunCursor{Created: r.Created, ID: r.ID}
	})
}

// seqCursor is the position in a run's examples.
type seqCursor struct {
	Seq int `json:"s"`
}

// Results returns the run and a page of its per-example results, in the run's
// example order (the examples' creation order). Codes: NOT_FOUND (run),
// INVALID_ARGUMENT (page size or token).
func (s *Service) Results(ctx context.Context, account *domain.Account, labelID, runID string, pageSize *int32, pageToken string) (*domain.DatasetRun, []*domain.DatasetRunResult, string, error) {
	q := paging.Query{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: defaultResultsPage, Max: maxRunPage, Scope: "datasetRunResults\x00" + account.ID + "\x00" + labelID + "\x00" + runID}
	var run *domain.DatasetRun
	check := func() (err error) {
		run, err = s.d.Datasets.GetDatasetRun(ctx, account.ID, labelID, runID)
		return err
	}
	rs, next, err := paging.Keyset(s.d.Tokens, q, check, func(after *seqCursor, limit int) ([]*domain.DatasetRunResult, error) {
		seq := -1
		if after != nil {
			seq = after.Seq
		}
		return s.d.Datasets.ListDatasetRunResults(ctx, runID, seq, limit)
	}, func(r *domain.DatasetRunResult) seqCursor { return seqCursor{Seq: r.Seq} })
	return run, rs, next, err
}

// Compare returns a page of the examples whose outcome in run runID
// differs from their outcome in run baseID (examples evaluated by both,
// in runID's example order). Both runs must be of the label and finished.
// Codes: NOT_FOUND (either run), INVALID_ARGUMENT (baseDatasetRunId
// missing, page size or token), FAILED_PRECONDITION (a run not finished).
func (s *Service) Compare(ctx context.Context, account *domain.Account, labelID, runID, baseID string, pageSize *int32, pageToken string) ([]*domain.DatasetRunChange, string, error) {
	if baseID == "" {
		return nil, "", domain.InvalidField("baseDatasetRunId", "is required")
	}
	q := paging.Query{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: defaultChangesPage, Max: maxRunPage, Scope: "datasetRunCompare\x00" + account.ID + "\x00" + labelID + "\x00" + runID + "\x00" + baseID}
	check := func() error {
		for _, id := range []string{runID, baseID} {
			r, err := s.d.Datasets.GetDatasetRun(ctx, account.ID, labelID, id)
			if err != nil {
				return err
			}
			if r.State != domain.DatasetRunCompleted && r.State != domain.DatasetRunFailed {
				return domain.Errorf(domain.FailedPrecondition, "dataset run %q is %s; compare finished runs", id, r.State)
			}
		}
		return nil
	}
	return paging.Keyset(s.d.Tokens, q, check, func(after *seqCursor, limit int) ([]*domain.DatasetRunChange, error) {
		seq := -1
		if after != nil {
			seq = after.Seq
		}
		return s.d.Datasets.CompareDatasetRuns(ctx, runID, baseID, seq, limit)
	}, func(c *domain.DatasetRunChange) seqCursor { return seqCursor{Seq: c.Seq} })
}
