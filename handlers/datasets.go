package handlers

import (
	"context"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/quality"
	"github.com/contenteval/contenteval/gen"
)

// The dataset endpoints of labels (docs/api.md#extension-endpoints): examples and dataset runs.

// CreateDatasetExamples adds examples to a label.
func (s *Server) CreateDatasetExamples(ctx context.Context, req gen.CreateDatasetExamplesRequestObject) (gen.CreateDatasetExamplesResponseObject, error) {
	in := make([]quality.NewExample, len(req.Body.Examples))
	for i, e := range req.Body.Examples {
		in[i] = quality.NewExample{
			Content:  toDomainContent([]gen.ContentData{e.ContentData})[0],
			Expected: domain.EvaluationResult(e.ExpectedOutcome), Note: deref(e.Note),
		}
	}
	es, err := s.deps.Quality.CreateExamples(ctx, AccountFrom(ctx), req.LabelId, in)
	if err != nil {
		return nil, err
	}
	return gen.CreateDatasetExamples200JSONResponse{Examples: toAPIExamples(es)}, nil
}

// ListDatasetExamples returns a page of a label's examples.
func (s *Server) ListDatasetExamples(ctx context.Context, req gen.ListDatasetExamplesRequestObject) (gen.ListDatasetExamplesResponseObject, error) {
	page, err := s.deps.Quality.ListExamples(ctx, AccountFrom(ctx), req.LabelId, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	return gen.ListDatasetExamples200JSONResponse{Examples: toAPIExamples(page.Examples), NextPageToken: nonEmpty(page.NextPageToken)}, nil
}

// DeleteDatasetExample deletes one example.
func (s *Server) DeleteDatasetExample(ctx context.Context, req gen.DeleteDatasetExampleRequestObject) (gen.DeleteDatasetExampleResponseObject, error) {
	if err := s.deps.Quality.DeleteExample(ctx, AccountFrom(ctx), req.LabelId, req.ExampleId); err != nil {
		return nil, err
	}
	return gen.DeleteDatasetExample200JSONResponse{ExampleId: req.ExampleId, Deleted: true}, nil
}

func toAPIExamples(es []*domain.DatasetExample) []gen.DatasetExample {
	out := make([]gen.DatasetExample, len(es))
	for i, e := range es {
		cd := gen.ContentData{Metadata: stringMap(e.Content.Metadata)}
		if e.Content.Kind == domain.ContentText {
			cd.Text = ptr(e.Content.Text)
		} else {
			cd.Image = ptr(e.Content.Bytes)
		}
		out[i] = gen.DatasetExample{ExampleId: e.ID, LabelId: e.LabelID, ContentData: cd, ContentHash: e.ContentHash,
			ExpectedOutcome: gen.EvaluationResult(e.Expected), Note: e.Note, Created: e.Created}
	}
	return out
}

// CreateDatasetRun queues a run of a label version over its examples.
func (s *Server) CreateDatasetRun(ctx context.Context, req gen.CreateDatasetRunRequestObject) (gen.CreateDatasetRunResponseObject, error) {
	var threshold *float64
	if req.Body != nil {
		threshold = req.Body.Threshold
	}
	r, err := s.deps.Quality.CreateRun(ctx, AccountFrom(ctx), req.LabelId, req.LabelVersionId, threshold)
	if err != nil {
		return nil, err
	}
	return gen.CreateDatasetRun200JSONResponse{DatasetRun: toAPIDatasetRun(r)}, nil
}

// GetDatasetRun returns one run.
func (s *Server) GetDatasetRun(ctx context.Context, req gen.GetDatasetRunRequestObject) (gen.GetDatasetRunResponseObject, error) {
	r, err := s.deps.Quality.GetRun(ctx, AccountFrom(ctx), req.LabelId, req.DatasetRunId)
	if err != nil {
		return nil, err
	}
	return gen.GetDatasetRun200JSONResponse{DatasetRun: toAPIDatasetRun(r)}, nil
}

// ListDatasetRuns returns a page of a label's runs, newest first.
func (s *Server) ListDatasetRuns(ctx context.Context, req gen.ListDatasetRunsRequestObject) (gen.ListDatasetRunsResponseObject, error) {
	rs, next, err := s.deps.Quality.ListRuns(ctx, AccountFrom(ctx), req.LabelId, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	out := make([]gen.DatasetRun, len(rs))
	for i, r := range rs {
		out[i] = toAPIDatasetRun(r)
	}
	return gen.ListDatasetRuns200JSONResponse{DatasetRuns: out, NextPageToken: nonEmpty(next)}, nil
}

// ListDatasetRunResults returns a page of a run's per-example results.
func (s *Server) ListDatasetRunResults(ctx context.Context, req gen.ListDatasetRunResultsRequestObject) (gen.ListDatasetRunResultsResponseObject, error) {
	account := AccountFrom(ctx)
	run, rs, next, err := s.deps.Quality.Results(ctx, account, req.LabelId, req.DatasetRunId, req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	// Reports show the run's label and version, as a label evaluation's do.
	j := &domain.Job{LabelID: run.LabelID, LabelVersionID: run.LabelVersionID}
	out := make([]gen.DatasetRunResult, len(rs))
	for i, r := range rs {
		out[i] = gen.DatasetRunResult{ExampleId: r.ExampleID, ExpectedOutcome: gen.EvaluationResult(r.Expected),
			ActualOutcome: gen.Outcome(r.Outcome), Score: r.Score}
		if r.Report != nil {
			out[i].Report = toAPIReport(j, &domain.JobResult{Report: r.Report})
		}
		if r.Error != "" {
			out[i].Error = ptr(r.Error)
		}
	}
	return gen.ListDatasetRunResults200JSONResponse{Results: out, NextPageToken: nonEmpty(next)}, nil
}

// CompareDatasetRuns lists the examples whose outcome differs between two
// runs.
func (s *Server) CompareDatasetRuns(ctx context.Context, req gen.CompareDatasetRunsRequestObject) (gen.CompareDatasetRunsResponseObject, error) {
	cs, next, err := s.deps.Quality.Compare(ctx, AccountFrom(ctx), req.LabelId, req.DatasetRunId, req.Params.BaseDatasetRunId,
		req.Params.PageSize, deref(req.Params.PageToken))
	if err != nil {
		return nil, err
	}
	out := make([]gen.DatasetRunChange, len(cs))
	for i, c := range cs {
		out[i] = gen.DatasetRunChange{ExampleId: c.ExampleID, ExpectedOutcome: gen.EvaluationResult(c.Expected),
			BaseOutcome: gen.Outcome(c.BaseOutcome), Outcome: gen.Outcome(c.Outcome)}
	}
	return gen.CompareDatasetRuns200JSONResponse{Changes: out, NextPageToken: nonEmpty(next)}, nil
}

func toAPIDatasetRun(r *domain.DatasetRun) gen.DatasetRun {
	out := gen.DatasetRun{
		DatasetRunId: r.ID, LabelId: r.LabelID, LabelVersionId: r.LabelVersionID,
		State:     gen.DatasetRunState("DATASET_RUN_STATE_" + strings.ToUpper(string(r.State))),
		Threshold: r.Threshold, ExampleCount: int32(r.ExampleCount),
		TruePositives: int32(r.TruePositives), FalsePositives: int32(r.FalsePositives),
		TrueNegatives: int32(r.TrueNegatives), FalseNegatives: int32(r.FalseNegatives),
		Failed: int32(r.Failed), Created: r.Created, Completed: r.Completed,
	}
	out.Precision, out.Recall, out.F1, out.Accuracy = confusionRates(r.Confusion)
	return out
}

// confusionRates returns precision, recall, F1 and accuracy, each nil when
// its denominator is 0.
func confusionRates(c domain.Confusion) (precision, recall, f1, accuracy *float64) {
	opt := func(v float64, ok bool) *float64 {
		if !ok {
			return nil
		}
		return &v
	}
	return opt(c.Precision()), opt(c.Recall()), opt(c.F1()), opt(c.Accuracy())
}
