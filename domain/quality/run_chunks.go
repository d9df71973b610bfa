package quality

import (
	"context"
	"fmt"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
)

// maxChunkAttempts is how many claims of a chunk may end in an error (the
// label version unreadable, the database failing) before the chunk gives
// up: its examples are counted failed and the run ends failed, instead of
// the chunk being retried forever.
const maxChunkAttempts = 3

// Messages of examples that could not be evaluated at all.
const (
	msgExampleDeleted = "The example was deleted before the run evaluated it."
	msgChunkGaveUp    = "The example could not be evaluated: its part of the run failed repeatedly."
)

// runChunk is the task of a dataset run's chunk job: it evaluates the
// chunk's examples with the run's label version through the item runner
// and records their results, counts and the chunk's end in one
// transaction guarded by the job's lease. A chunk claimed again after a
// crash evaluates its examples again; only one claim's results are ever
// recorded.
func (s *Service) runChunk(ctx context.Context, j *domain.Job, runner *jobs.ItemRunner) error {
	runID := j.Options[optRun]
	from, err1 := strconv.Atoi(j.Options[optFrom])
	to, err2 := strconv.Atoi(j.Options[optTo])
	if runID == "" || err1 != nil || err2 != nil {
		return fmt.Errorf("dataset run chunk job %s has bad options %v", j.ID, j.Options)
	}
	results, err := s.evaluateChunk(ctx, j, runID, from, to, runner)
	gaveUp := false
	if err != nil {
		if ctx.Err() != nil || j.Attempts < maxChunkAttempts {
			return err
		}
		s.d.Log.Error("dataset run chunk gave up", "run", runID, "job", j.ID, "attempts", j.Attempts, "error", err.Error())
		if results, err = s.giveUp(ctx, runID, from, to); err != nil {
			return err
		}
		gaveUp = true
	}
	return s.d.Datasets.FinishDatasetRunChunk(ctx, j.ID, j.LeaseOwner, runID, results, gaveUp, s.d.Clock.Now())
}

// giveUp returns the results of a chunk that could not be evaluated: every
// example failed.
func (s *Service) giveUp(ctx context.Context, runID string, from, to int) ([]*domain.DatasetRunResult, error) {
	var results []*domain.DatasetRunResult
	for next := from; next < to; {
		items, err := s.d.Datasets.DatasetRunItems(ctx, runID, next, to, domain.MaxExamplesPageBytes)
		if err != nil || len(items) == 0 {
			return results, err
		}
		for _, it := range items {
			results = append(results, failedResult(it, msgChunkGaveUp))
		}
		next = items[len(items)-1].Seq + 1
	}
	return results, nil
}

// evaluateChunk evaluates items with the run's label version. An example's
// own failure (deleted, refused by the precheck, over its time budget) is
// its result; any other error ends the chunk's attempt.
// The items are read in parts of at most MaxExamplesPageBytes of content.
func (s *Service) evaluateChunk(ctx context.Context, j *domain.Job, runID string, from, to int, runner *jobs.ItemRunner) ([]*domain.DatasetRunResult, error) {
	eval, name, err := s.labelEvaluator(ctx, j.AccountID, j.LabelID, j.LabelVersionID, j.Threshold)
	if err != nil {
		return nil, err
	}
	results := make([]*domain.DatasetRunResult, 0, to-from)
	for next := from; next < to; {
		items, err := s.d.Datasets.DatasetRunItems(ctx, runID, next, to, domain.MaxExamplesPageBytes)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			break
		}
		next = items[len(items)-1].Seq + 1
		if results, err = s.evaluateItems(ctx, j, items, eval, name, runner, results); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// evaluateItems appends the results of items to results.
func (s *Service) evaluateItems(ctx context.Context, j *domain.Job, items []*domain.DatasetRunItem, eval jobs.EvaluateFunc, name string,
	runner *jobs.ItemRunner, results []*domain.DatasetRunResult) ([]*domain.DatasetRunResult, error) {
	for _, it := range items {
		if it.Example == nil {
			results = append(results, failedResult(it, msgExampleDeleted))
			continue
		}
		seq := 0
		res, _, err := runner.Run(ctx, jobs.Item{
			AccountID: j.AccountID, JobID: j.ID, Index: it.Seq, Field: "example",
			Content: it.Example.Content, ContentHash: it.Example.ContentHash,
		}, eval, &seq)
		if ie, ok := jobs.AsItemError(err); ok {
			results = append(results, failedResult(it, ie.Job.Message))
			continue
		}
		if err != nil {
			return nil, err
		}
		r := &domain.DatasetRunResult{Seq: it.Seq, ExampleID: it.ExampleID, Expected: it.Expected,
			Outcome: rules.OutcomeFailed, Score: -1, Report: res.Report}
		if sec := labelSection(res.Report, name); sec != nil {
			r.Outcome, r.Score = sec.Result, sec.Score
		}
		results = append(results, r)
	}
	return results, nil
}

func failedResult(it *domain.DatasetRunItem, msg string) *domain.DatasetRunResult {
	return &domain.DatasetRunResult{Seq: it.Seq, ExampleID: it.ExampleID, Expected: it.Expected,
		Outcome: rules.OutcomeFailed, Score: -1, Error: msg}
}

// labelEvaluator returns the evaluation of a label version as label
// evaluation makes it: the section takes the label's current name, the
// version's global context and expedited option apply.
func (s *Service) labelEvaluator(ctx context.Context, accountID, labelID, versionID string, threshold float64) (jobs.EvaluateFunc, string, error) {
	l, err := s.d.Labels.GetLabel(ctx, accountID, labelID)
	if err != nil {
		return nil, "", err
	}
	v, err := s.d.Versions.GetLabelVersion(ctx, accountID, labelID, versionID)
	if err != nil {
		return nil, "", err
	}
	plan, err := s.plans.GetOrCompile(v.ID+"\x00"+l.Name, v.Text, rules.CompileOptions{LabelName: l.Name})
	if err != nil {
		return nil, "", err
	}
	opts := rules.EvalOptions{Threshold: threshold, GlobalContext: v.GlobalContext, Account: accountID}
	if e := v.EvalOptions.Expedited; e != nil {
		opts.Expedited = *e
	}
	stack := ""
	if v.EvalOptions.Stack != nil {
		stack = *v.EvalOptions.Stack
	}
	opts.Evaluator = domain.EvaluatorFor(s.d.Backends, stack, opts.Expedited)
	return func(ctx context.Context, c rules.Content) (*rules.Report, error) {
		return plan.Evaluate(ctx, c, opts)
	}, l.Name, nil
}

// labelSection returns the section of a label version's report: the one
// named after the label, or the only one.
func labelSection(rep *rules.Report, name string) *rules.SectionReport {
	for i := range rep.Sections {
		if rep.Sections[i].Name == name {
			return &rep.Sections[i]
		}
	}
	if len(rep.Sections) == 1 {
		return &rep.Sections[0]
	}
	return nil
}
