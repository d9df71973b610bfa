package quality

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
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
func (s *Service) runChunk(ctx context.Context, j *domain.Job, runner *evaluation.ItemRunner) error {
	runID := j.Options[optRun]
	from, err1 := strconv.Atoi(j.Options[optFrom])
	to, err2 := strconv.Atoi(j.Options[optTo])
	if runID == "" || err1 != nil || err2 != nil {
		return fmt.Errorf("dataset run chunk job %s has bad options %v", j.ID, j.Options)
	}
	results, next, err := s.evaluateChunk(ctx, j, runID, from, to, runner)
	if err == nil && next < to {
		return s.yieldChunk(j, runID, results, next)
	}
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

// yieldChunk gives the chunk's worker to another account: the results so
// far are recorded and the chunk's job is queued again for the examples
// from next on.
func (s *Service) yieldChunk(j *domain.Job, runID string, results []*domain.DatasetRunResult, next int) error {
	options := make(map[string]string, len(j.Options))
	for k, v := range j.Options {
		options[k] = v
	}
	options[optFrom] = strconv.Itoa(next)
	// Not the task's context: a yield decided just before the process's
	// shutdown still records what was evaluated.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.d.Datasets.YieldDatasetRunChunk(ctx, j.ID, j.LeaseOwner, runID, results, options, s.d.Clock.Now())
}

// evaluateChunk evaluates items with the run's label version. An example's
// own failure (deleted, refused by the precheck, over its time budget) is
// its result; any other error ends the chunk's attempt. When the worker
// is owed to another account (jobs.Service.ShouldYield, asked between two
// examples), it stops early: next is then the first example not
// evaluated, else to. The items are read in parts of at most
// MaxExamplesPageBytes of content.
func (s *Service) evaluateChunk(ctx context.Context, j *domain.Job, runID string, from, to int, runner *evaluation.ItemRunner) (results []*domain.DatasetRunResult, next int, err error) {
	eval, name, err := s.labelEvaluator(ctx, j.AccountID, j.LabelID, j.LabelVersionID, j.Threshold)
	if err != nil {
		return nil, 0, err
	}
	results = make([]*domain.DatasetRunResult, 0, to-from)
	for next = from; next < to; {
		items, err := s.d.Datasets.DatasetRunItems(ctx, runID, next, to, domain.MaxExamplesPageBytes)
		if err != nil {
			return nil, 0, err
		}
		if len(items) == 0 {
			break
		}
		stop := 0
		if results, stop, err = s.evaluateItems(ctx, j, items, eval, name, runner, results); err != nil {
			return nil, 0, err
		}
		if stop < len(items) {
			return results, items[stop].Seq, nil
		}
		next = items[len(items)-1].Seq + 1
	}
	return results, to, nil
}

// evaluateItems appends the results of items to results, and returns how
// many items it evaluated: fewer than all when the worker is to yield.
func (s *Service) evaluateItems(ctx context.Context, j *domain.Job, items []*domain.DatasetRunItem, eval evaluation.EvaluateFunc, name string,
	runner *evaluation.ItemRunner, results []*domain.DatasetRunResult) ([]*domain.DatasetRunResult, int, error) {
	for n, it := range items {
		// Every claim evaluates one example at least.
		if len(results) > 0 && s.d.Jobs.ShouldYield(ctx, j) {
			return results, n, nil
		}
		if it.Example == nil {
			results = append(results, failedResult(it, msgExampleDeleted))
			continue
		}
		seq := 0
		res, _, err := runner.Run(ctx, evaluation.Item{
			AccountID: j.AccountID, JobID: j.ID, Index: it.Seq, Field: "example",
			Content: it.Example.Content, ContentHash: it.Example.ContentHash,
		}, eval, &seq)
		if ie, ok := evaluation.AsItemError(err); ok {
			results = append(results, failedResult(it, ie.Job.Message))
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		r := &domain.DatasetRunResult{Seq: it.Seq, ExampleID: it.ExampleID, Expected: it.Expected,
			Outcome: rules.OutcomeFailed, Score: -1, Report: res.Report}
		if sec := evaluation.LabelSection(res.Report, name); sec != nil {
			r.Outcome, r.Score = sec.Result, sec.Score
		}
		results = append(results, r)
	}
	return results, len(items), nil
}

func failedResult(it *domain.DatasetRunItem, msg string) *domain.DatasetRunResult {
	return &domain.DatasetRunResult{Seq: it.Seq, ExampleID: it.ExampleID, Expected: it.Expected,
		Outcome: rules.OutcomeFailed, Score: -1, Error: msg}
}

// labelEvaluator returns the evaluation of a label version as label
// evaluation makes it, at the run's threshold: the section takes the
// label's current name, the version's global context, expedited option and
// stack apply.
func (s *Service) labelEvaluator(ctx context.Context, accountID, labelID, versionID string, threshold float64) (evaluation.EvaluateFunc, string, error) {
	l, err := s.d.Labels.GetLabel(ctx, accountID, labelID)
	if err != nil {
		return nil, "", err
	}
	v, err := s.d.Versions.GetLabelVersion(ctx, accountID, labelID, versionID)
	if err != nil {
		return nil, "", err
	}
	st, _ := evaluation.LabelSettingsOf(v, l.Name, evaluation.LabelOverrides{Threshold: &threshold})
	// Runs measure the version as it is: cached signals serve them.
	eval, err := evaluation.LabelEvaluator(s.plans, v, st, false, s.d.Backends)
	return eval, l.Name, err
}
