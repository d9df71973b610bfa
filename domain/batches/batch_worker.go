package batches

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/rules"
)

// submitChunk is how many items are recorded per transaction while
// submitting. It must not change between releases that may resume each
// other's batches: a resumed submission finds whole chunks.
const submitChunk = 500

// errLeaseLost ends a worker's run of a batch that another worker or a
// cancel took over.
var errLeaseLost = errors.New("batch lease lost")

// RunWorkers drives batches until ctx ends: claims batches in a worked
// state (several processes may run workers on one database; leases keep one
// worker per batch), moves each through its lifecycle step by step, and on
// shutdown releases the batches it holds. A crashed worker's batches are
// claimed again when their lease expires and resume at the state they
// reached; every step is idempotent (see BatchState).
func (s *Service) RunWorkers(ctx context.Context) {
	slots := make(chan struct{}, s.cfg.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	lastWatch := time.Time{}
	jobs.PollLoop(ctx, s.cfg.PollInterval, s.wake, nil, func() bool {
		if s.direct && time.Since(lastWatch) >= time.Second {
			lastWatch = time.Now()
			s.watchUploads(ctx)
		}
		if len(slots) == cap(slots) {
			return false
		}
		now := s.d.Clock.Now()
		b, err := s.d.Store.ClaimBatch(ctx, s.owner, now, now.Add(s.cfg.Lease))
		switch {
		case err == nil:
			slots <- struct{}{}
			running.Add(1)
			go func() {
				defer running.Done()
				defer func() { <-slots; s.notify() }()
				s.drive(ctx, b)
			}()
			return true
		case domain.ErrorCode(err) != domain.NotFound && ctx.Err() == nil:
			s.d.Log.Warn("claiming batch jobs", "error", err.Error())
		}
		return false
	})
}

// watchUploads queues batches whose file a client uploaded straight to the
// blob store with a presigned URL.
func (s *Service) watchUploads(ctx context.Context) {
	now := s.d.Clock.Now()
	bs, err := s.d.Store.ListAwaitingUpload(ctx, now.Add(-s.cfg.URLValidity-time.Minute), 100)
	if err != nil {
		s.d.Log.Warn("listing batch jobs awaiting upload", "error", err.Error())
		return
	}
	for _, b := range bs {
		key := batchDirectInputKey(b.ID)
		if _, err := s.d.Blobs.Stat(ctx, key); err != nil {
			continue
		}
		if _, err := s.d.Store.SetBatchInput(ctx, b.ID, key, now); err != nil && domain.ErrorCode(err) != domain.FailedPrecondition {
			s.d.Log.Warn("queueing an uploaded batch job", "batch", b.ID, "error", err.Error())
		}
	}
}

// drive runs one claimed batch until it is terminal, its lease is lost, a
// step fails (the batch is released and retried later) or ctx ends.
func (s *Service) drive(ctx context.Context, b *domain.BatchJob) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := s.renewBatch(wctx, cancel, b.ID)
	defer stop()
	defer func() {
		if b.State.Terminal() {
			s.dropInput(b)
		}
	}()
	for !b.State.Terminal() {
		next, err := s.step(wctx, b)
		if err != nil {
			switch {
			case errors.Is(err, errLeaseLost) || domain.ErrorCode(err) == domain.Aborted:
				// Cancelled, or another worker has it: nothing to do.
			case ctx.Err() != nil:
				s.release(b.ID)
			default:
				s.d.Log.Error("batch job step failed; it will be retried", "batch", b.ID, "state", string(b.State), "error", err.Error())
				s.release(b.ID)
			}
			return
		}
		b = next
	}
}

// dropInput deletes a terminal batch's input files (best effort): the
// items live on in their jobs, the file is not needed and may be large or
// sensitive.
func (s *Service) dropInput(b *domain.BatchJob) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, key := range []string{b.InputKey, batchDirectInputKey(b.ID)} {
		if key == "" {
			continue
		}
		if err := s.d.Blobs.Delete(ctx, key); err != nil {
			s.d.Log.Warn("deleting a batch input file", "batch", b.ID, "error", err.Error())
		}
	}
}

func (s *Service) release(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.d.Store.ReleaseBatch(ctx, id, s.owner); err != nil {
		s.d.Log.Warn("releasing batch job", "batch", id, "error", err.Error())
	}
}

// renewBatch keeps the batch's lease while this worker drives it; losing
// it cancels the run through cancel.
func (s *Service) renewBatch(ctx context.Context, cancel context.CancelFunc, id string) (stop func()) {
	return jobs.KeepLease(ctx, cancel, s.cfg.Lease, func(ctx context.Context) error {
		now := s.d.Clock.Now()
		return s.d.Store.RenewBatchLease(ctx, id, s.owner, now.Add(s.cfg.Lease), now)
	})
}

// transition applies a guarded step of b held by this worker.
func (s *Service) transition(ctx context.Context, b *domain.BatchJob, to domain.BatchState, t domain.BatchTransition) (*domain.BatchJob, error) {
	if err := domain.CheckTransition(b.State, to); err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	t.ID, t.From, t.To, t.Owner, t.Now = b.ID, b.State, to, s.owner, now
	if to.Terminal() {
		t.Webhook = batchWebhook(b, to, now)
	}
	return s.d.Store.TransitionBatch(ctx, t)
}

// step performs the work of b's state and moves it to the next one.
func (s *Service) step(ctx context.Context, b *domain.BatchJob) (*domain.BatchJob, error) {
	switch b.State {
	case domain.BatchQueued:
		t := domain.BatchTransition{}
		if b.InputKey == batchDirectInputKey(b.ID) {
			// A presigned URL can still overwrite that object: parse a copy
			// no client can reach.
			frozen := batchInputKey(b.ID, "frozen")
			if err := s.copyBlob(ctx, b.InputKey, frozen); err != nil {
				return nil, err
			}
			t.InputKey = frozen
		}
		return s.transition(ctx, b, domain.BatchPreprocessing, t)
	case domain.BatchPreprocessing:
		n, err := s.parse(ctx, b, func(*InputItem) error { return nil })
		var bad *InputError
		switch {
		case errors.As(err, &bad):
			return s.transition(ctx, b, domain.BatchError, domain.BatchTransition{ErrorCode: domain.BatchErrInvalidInput, ErrorMessage: bad.Error()})
		case domain.ErrorCode(err) == domain.NotFound:
			return s.transition(ctx, b, domain.BatchError, domain.BatchTransition{ErrorCode: domain.BatchErrInvalidInput, ErrorMessage: "the input file is missing"})
		case err != nil:
			return nil, err
		}
		return s.transition(ctx, b, domain.BatchPreprocessed, domain.BatchTransition{ItemCount: &n})
	case domain.BatchPreprocessed:
		if err := s.submit(ctx, b); err != nil {
			var bad *InputError
			if errors.As(err, &bad) { // the file changed under us: cannot happen with frozen keys
				return s.transition(ctx, b, domain.BatchError, domain.BatchTransition{ErrorCode: domain.BatchErrInvalidInput, ErrorMessage: bad.Error()})
			}
			return nil, err
		}
		return s.transition(ctx, b, domain.BatchSubmitted, domain.BatchTransition{})
	case domain.BatchSubmitted:
		return s.transition(ctx, b, domain.BatchEvaluating, domain.BatchTransition{})
	case domain.BatchEvaluating:
		if err := s.awaitItems(ctx, b); err != nil {
			return nil, err
		}
		return s.transition(ctx, b, domain.BatchPostprocessing, domain.BatchTransition{})
	case domain.BatchPostprocessing:
		key, err := s.writeOutput(ctx, b)
		if err != nil {
			return nil, err
		}
		return s.transition(ctx, b, domain.BatchPostprocessed, domain.BatchTransition{OutputKey: key})
	case domain.BatchPostprocessed:
		return s.transition(ctx, b, domain.BatchCompleted, domain.BatchTransition{})
	}
	return nil, domain.Errorf(domain.FailedPrecondition, "batch job %q is %s: no worker step", b.ID, b.State)
}

func (s *Service) copyBlob(ctx context.Context, from, to string) error {
	rc, err := s.d.Blobs.Open(ctx, from)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = s.d.Blobs.Put(ctx, to, rc)
	return err
}

func (s *Service) limits() InputLimits {
	return InputLimits{MaxItems: s.cfg.MaxItems, MaxTextBytes: s.cfg.MaxTextBytes, MaxLineBytes: s.cfg.MaxLineBytes}
}

// parse streams b's input file through the parser.
func (s *Service) parse(ctx context.Context, b *domain.BatchJob, emit func(*InputItem) error) (int, error) {
	if b.InputKey == "" {
		return 0, domain.Errorf(domain.NotFound, "no input file")
	}
	rc, err := s.d.Blobs.Open(ctx, b.InputKey)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return ParseInput(domain.ContextReader(ctx, rc), s.limits(), emit)
}

// submit records the items and enqueues one job per item, chunk by chunk in
// input order. Resumable: a chunk already recorded keeps its job ids, and
// job creation tolerates jobs that already exist.
func (s *Service) submit(ctx context.Context, b *domain.BatchJob) error {
	chunk := make([]*InputItem, 0, submitChunk)
	seq := 0
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		err := s.submitChunk(ctx, b, seq, chunk)
		seq += len(chunk)
		chunk = chunk[:0]
		return err
	}
	n, err := s.parse(ctx, b, func(it *InputItem) error {
		chunk = append(chunk, it)
		if len(chunk) == submitChunk {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if n != b.ItemCount {
		return fmt.Errorf("batch %s: the input file has %d items, %d when validated", b.ID, n, b.ItemCount)
	}
	return nil
}

func (s *Service) submitChunk(ctx context.Context, b *domain.BatchJob, from int, chunk []*InputItem) error {
	existing, err := s.d.Store.ListBatchItems(ctx, b.ID, from, len(chunk))
	if err != nil {
		return err
	}
	items := existing
	now := s.d.Clock.Now()
	if len(existing) == 0 {
		items = make([]*domain.BatchItem, len(chunk))
		group := 0
		for i, it := range chunk {
			// Runs of text items share a job (up to ItemsPerJob); other
			// kinds get a job each, so one failing fetch fails one item.
			text := it.Content.Kind == domain.ContentText
			if i == 0 || !text || items[i-1].JobIndex+1 >= s.cfg.ItemsPerJob || chunk[i-1].Content.Kind != domain.ContentText {
				group = i
			}
			items[i] = &domain.BatchItem{BatchID: b.ID, Seq: from + i, RefID: it.RefID, ContentHash: it.Summary.ContentHash,
				Status: domain.BatchItemPending, JobIndex: i - group}
			if i == group {
				items[i].JobID = domain.NewIDAt(now)
			} else {
				items[i].JobID = items[group].JobID
			}
		}
		if err := s.d.Store.InsertBatchItems(ctx, b.ID, s.owner, items); err != nil {
			return err
		}
	} else if len(existing) != len(chunk) {
		return fmt.Errorf("batch %s: %d items recorded at %d, want %d", b.ID, len(existing), from, len(chunk))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.cfg.SubmitWorkers)
	var mu sync.Mutex
	var firstErr error
	for i := 0; i < len(items); {
		// One job per run of items with the same job id (recorded order).
		k := i + 1
		for k < len(items) && items[k].JobID == items[i].JobID {
			k++
		}
		group, inputs := items[i:k], chunk[i:k]
		i = k
		if group[0].Status == domain.BatchItemSubmitted {
			continue
		}
		// The job was created when its id was made, with its items,
		// however much later a resumed batch submits it: a job's id is a
		// UUIDv7 of its creation time (docs/operations.md, "Retention").
		created := now
		if t, ok := domain.IDTime(group[0].JobID); ok && t.Before(now) {
			created = t
		}
		j := &domain.Job{
			ID: group[0].JobID, AccountID: b.AccountID, Type: domain.JobTypeBatch, Status: domain.JobPending,
			PolicyID: b.PolicyID, PolicyKey: b.PolicyKey, PolicyVersionID: b.PolicyVersionID,
			Threshold: rules.DefaultThreshold, Options: b.Options, Created: created, Updated: now,
		}
		for n, item := range group {
			if item.RefID != inputs[n].RefID || item.JobIndex != n {
				return fmt.Errorf("batch %s: item %d is %q, recorded as %q", b.ID, item.Seq, inputs[n].RefID, item.RefID)
			}
			j.Input = append(j.Input, inputs[n].Content)
			j.Contents = append(j.Contents, inputs[n].Summary)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := s.d.Jobs.CreateJob(ctx, j); err != nil && domain.ErrorCode(err) != domain.AlreadyExists {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if s.d.JobQueue != nil {
		s.d.JobQueue.Notify()
	}
	return s.d.Store.MarkBatchItemsSubmitted(ctx, b.ID, s.owner, from, from+len(items), s.d.Clock.Now())
}

// awaitItems refreshes the progress counts until every item's job is
// terminal.
func (s *Service) awaitItems(ctx context.Context, b *domain.BatchJob) error {
	lastP, lastF := b.ProcessedCount, b.FailedCount
	for {
		processed, failed, err := s.d.Store.BatchProgress(ctx, b.ID)
		if err != nil {
			return err
		}
		if processed != lastP || failed != lastF {
			if err := s.d.Store.SetBatchProgress(ctx, b.ID, s.owner, b.State, processed, failed, s.d.Clock.Now()); err != nil {
				return err
			}
			lastP, lastF = processed, failed
		}
		if processed >= b.ItemCount {
			return nil
		}
		// The count is a join over the batch's items: refresh it often
		// enough for progress reports, not as often as the job queue polls.
		t := time.NewTimer(max(s.cfg.PollInterval, progressInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// progressInterval is the least time between two progress counts.
const progressInterval = 500 * time.Millisecond

// outputPage is how many items are read per query while writing output.
const outputPage = 1000

// writeOutput writes the output file in one pass over the items in input
// order and stores it atomically under the batch's output key, replacing
// any earlier attempt: the stored file holds each item exactly once.
func (s *Service) writeOutput(ctx context.Context, b *domain.BatchJob) (string, error) {
	key := batchOutputKey(b.ID)
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 256<<10)
		n, err := s.encodeOutput(ctx, b, w)
		if err == nil {
			err = w.Flush()
		}
		if err == nil && n != b.ItemCount {
			err = fmt.Errorf("batch %s: %d output lines for %d items", b.ID, n, b.ItemCount)
		}
		pw.CloseWithError(err)
	}()
	_, err := s.d.Blobs.Put(ctx, key, pr)
	pr.CloseWithError(err) // unblock the writer when Put gave up early
	if err != nil {
		return "", err
	}
	return key, nil
}

func (s *Service) encodeOutput(ctx context.Context, b *domain.BatchJob, w *bufio.Writer) (int, error) {
	n := 0
	for from := 0; ; {
		page, err := s.d.Store.ListBatchOutcomes(ctx, b.ID, from, outputPage)
		if err != nil {
			return n, err
		}
		for _, o := range page {
			if o.Seq != n {
				return n, fmt.Errorf("batch %s: item %d missing from the output", b.ID, n)
			}
			line, err := s.d.Lines.EncodeBatchLine(b, o)
			if err != nil {
				return n, err
			}
			w.Write(line)
			if err := w.WriteByte('\n'); err != nil {
				return n, err
			}
			n++
		}
		if len(page) < outputPage {
			return n, nil
		}
		from = page[len(page)-1].Seq + 1
	}
}
