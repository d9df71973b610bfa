package evaluation

import (
	"context"
	"errors"
	"fmt"
	"github.com/contenteval/contenteval/domain/traces"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
)

// ItemRunner is how one content item is evaluated, for every kind of
// evaluation: queued and synchronous jobs (and so batch items, which are
// queued jobs), the stream, label evaluation. It runs the stages in order —
// inspection (an image's fetch, precheck and OCR), evaluation by the
// caller's evaluator (timed media are staged, prechecked frame by frame and
// transcribed as they are evaluated), the hits — within the item's time
// budget, and it alone decides which failures are the item's (ItemError)
// and with which job error they end a job.
type ItemRunner struct {
	cfg ItemRunnerConfig
}

// ItemRunnerConfig are the adapters and the budget of an ItemRunner.
type ItemRunnerConfig struct {
	// Images inspects image items; nil fails them with ErrJobNoImage.
	Images domain.ImageInspector
	// Media analyses video and audio items; nil fails them with
	// ErrJobNoMedia. MediaPrecheck checks their frames against the hash
	// lists (nil: no frame precheck).
	Media         domain.MediaAnalyzer
	MediaPrecheck domain.FramePrecheckFor
	// Budget bounds one item's inspection and evaluation (--item-deadline), so
	// that no single item holds a worker longer.
	Budget time.Duration
	Now    func() time.Time
}

// NewItemRunner returns a runner; a zero Budget is 30 s.
func NewItemRunner(cfg ItemRunnerConfig) *ItemRunner {
	if cfg.Budget <= 0 {
		cfg.Budget = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &ItemRunner{cfg: cfg}
}

// Item is one content item of a job.
type Item struct {
	AccountID string
	JobID     string // "" when the item is inspected before its jobs exist
	Index     int
	// Field names the item in client errors: "contentData[2]".
	Field   string
	Content domain.ContentItem
	// ContentHash is the hash computed on submission; "" for URLs, whose
	// bytes were not known then.
	ContentHash string
	Options     map[string]string
}

// JobItem returns item i of job j.
func JobItem(j *domain.Job, i int) Item {
	it := Item{
		AccountID: j.AccountID, JobID: j.ID, Index: i, Field: fmt.Sprintf("contentData[%d]", i),
		Content: j.Input[i], Options: j.Options,
	}
	if i < len(j.Contents) {
		it.ContentHash = j.Contents[i].ContentHash
	}
	return it
}

// JobItems are j's content entries as items to run.
func JobItems(j *domain.Job) []Item {
	items := make([]Item, len(j.Input))
	for i := range j.Input {
		items[i] = JobItem(j, i)
	}
	return items
}

// InspectedItem is an item ready for evaluation, its text and image
// features extracted (timed media are extracted as they are evaluated).
type InspectedItem struct {
	item     Item
	content  rules.Content
	modality domain.Modality
	hash     string
	precheck []rules.PrecheckMatch
}

// ContentHash is the item's hash: the one of submission, or of the fetched
// image.
func (in *InspectedItem) ContentHash() string { return in.hash }

// ForJob returns the item as one of job jobID: an item inspected once for
// several jobs (one per label version) is evaluated into each.
func (in *InspectedItem) ForJob(jobID string) *InspectedItem {
	c := *in
	c.item.JobID = jobID
	return &c
}

// Content is what the rule engine evaluates of the item (timed media:
// nothing; their frames and chunks are evaluated as they are extracted).
func (in *InspectedItem) Content() rules.Content { return in.content }

// UninspectedItem is it taken as text, without inspection: what label
// evaluation starts from for content it does not inspect (video, audio, or
// images without an inspector), which then fails each version's job.
func UninspectedItem(it Item) *InspectedItem {
	return &InspectedItem{item: it, hash: it.ContentHash, modality: domain.ModalityText,
		content: rules.Content{Text: it.Content.Text, Modality: "text"}}
}

// errItemBudget is the cause of an item's context whose budget ran out: it
// tells the item's budget apart from the job's deadline, a lost lease and a
// shutdown, which end the same context.
var errItemBudget = errors.New("the content item overran its time budget")

// ItemError is the failure of one item that ends its job with a job error
// of its own: a precheck rejection, an image that could not be fetched, OCR
// or media tools missing, media that cannot be decoded, the item's budget.
// Every other error of the runner (the job's deadline, a lost lease, a
// shutdown, a canceled request, an internal error) is returned as it is,
// for the caller to end the run as it must.
type ItemError struct {
	Index int
	Job   domain.JobError
	// Err is the cause, a client-facing *Error where there is one (the
	// precheck's CANCELED with its PrecheckFailure, a URL's
	// INVALID_ARGUMENT naming the field, DEADLINE_EXCEEDED for the budget).
	Err error
}

func (e *ItemError) Error() string {
	return fmt.Sprintf("content item %d: %s: %v", e.Index, e.Job.Reason, e.Err)
}

func (e *ItemError) Unwrap() error { return e.Err }

// AsItemError returns err's ItemError, if it is one.
func AsItemError(err error) (*ItemError, bool) {
	var ie *ItemError
	ok := errors.As(err, &ie)
	return ie, ok
}

// RequestError is what a synchronous caller gets instead of the failed
// job, or nil when the failed job is the answer: the request's own content
// was refused (the precheck's 499 body, an image URL's 400, OCR requested
// but unavailable).
func (e *ItemError) RequestError() error {
	if imageJobError(e.Err) != nil {
		return e.Err
	}
	return nil
}

// StreamError is the error line of the item in a stream: the client-facing
// error where there is one, INVALID_ARGUMENT with the job error's message
// otherwise (media failures).
func (e *ItemError) StreamError() *domain.Error {
	var de *domain.Error
	if errors.As(e.Err, &de) {
		return de
	}
	return domain.Errorf(domain.InvalidArgument, "%s", e.Job.Message)
}

// Run inspects and evaluates it with eval within one budget, and returns
// its result and hits (numbered from *seq on).
func (r *ItemRunner) Run(ctx context.Context, it Item, eval EvaluateFunc, seq *int) (*domain.JobResult, []*domain.LabelHit, error) {
	var res *domain.JobResult
	var hits []*domain.LabelHit
	err := r.within(ctx, it.Index, func(ctx context.Context) error {
		in, err := r.inspect(ctx, it)
		if err != nil {
			return err
		}
		res, hits, err = r.evaluate(ctx, in, eval, seq)
		return err
	})
	return res, hits, err
}

// Inspect prepares it for evaluation within a budget of its own: for
// evaluations of one item by several evaluators (label versions), which
// fetch and precheck it once.
func (r *ItemRunner) Inspect(ctx context.Context, it Item) (*InspectedItem, error) {
	var in *InspectedItem
	err := r.within(ctx, it.Index, func(ctx context.Context) error {
		var err error
		in, err = r.inspect(ctx, it)
		return err
	})
	return in, err
}

// Evaluate evaluates an inspected item with eval within a budget of its
// own.
func (r *ItemRunner) Evaluate(ctx context.Context, in *InspectedItem, eval EvaluateFunc, seq *int) (*domain.JobResult, []*domain.LabelHit, error) {
	var res *domain.JobResult
	var hits []*domain.LabelHit
	err := r.within(ctx, in.item.Index, func(ctx context.Context) error {
		var err error
		res, hits, err = r.evaluate(ctx, in, eval, seq)
		return err
	})
	return res, hits, err
}

// within runs fn under the item budget. Past the budget its error becomes
// the item's (whatever fn returned as it was cut short: a failed fetch, a
// killed ffmpeg, ctx.Err()); an error fn marked as the item's stays one;
// once ctx itself has ended, every error is returned as it is, since the
// run is over for a reason that is not the item's.
func (r *ItemRunner) within(ctx context.Context, index int, fn func(context.Context) error) error {
	ictx, cancel := context.WithTimeoutCause(ctx, r.cfg.Budget, errItemBudget)
	defer cancel()
	err := fn(ictx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		if ie, ok := AsItemError(err); ok {
			return ie.Err
		}
		return err
	case errors.Is(context.Cause(ictx), errItemBudget):
		return &ItemError{Index: index, Job: domain.ErrJobItemDeadline,
			Err: domain.Errorf(domain.DeadlineExceeded, "%s", domain.ErrJobItemDeadline.Message)}
	}
	return err
}

// inspect extracts what the rule engine evaluates of a text or image item.
func (r *ItemRunner) inspect(ctx context.Context, it Item) (*InspectedItem, error) {
	in := &InspectedItem{item: it, hash: it.ContentHash, modality: domain.ModalityText,
		content: rules.Content{Text: it.Content.Text, Modality: "text"}}
	switch it.Content.Kind {
	case domain.ContentImage, domain.ContentImageURL:
		if r.cfg.Images == nil {
			return nil, &ItemError{Index: it.Index, Job: domain.ErrJobNoImage, Err: domain.Errorf(domain.Unimplemented, "%s", domain.ErrJobNoImage.Message)}
		}
		img, err := r.cfg.Images.InspectImage(ctx, it.AccountID, it.JobID, it.Content, it.Options)
		if err != nil {
			err = RenameFields(err, "", it.Field+".")
			if e := imageJobError(err); e != nil {
				return nil, &ItemError{Index: it.Index, Job: *e, Err: err}
			}
			return nil, err
		}
		in.content = rules.Content{Text: img.Text, Image: &img.Features, Modality: "image", ImageBytes: img.Encoded, ImageType: img.MediaType}
		in.hash, in.modality, in.precheck = img.ContentHash, domain.ModalityImage, img.PrecheckMatches
	case domain.ContentText:
	default:
		in.content = rules.Content{}
	}
	return in, nil
}

// evaluate evaluates an inspected item into its result and hits.
func (r *ItemRunner) evaluate(ctx context.Context, in *InspectedItem, eval EvaluateFunc, seq *int) (_ *domain.JobResult, _ []*domain.LabelHit, err error) {
	ctx, span := traces.Start(ctx, "jobs.evaluate_item")
	if span.IsRecording() {
		span.SetAttributes(traces.JobID(in.item.JobID), traces.AccountID(in.item.AccountID), traces.ItemIndex(in.item.Index))
	}
	defer func() { traces.Fail(span, err); span.End() }()
	if domain.IsMediaKind(in.item.Content.Kind) {
		return r.evaluateMedia(ctx, in.item, eval, seq)
	}
	rep, err := eval(ctx, in.content)
	if err != nil {
		return nil, nil, err
	}
	rep = withPrecheck(rep, in.precheck)
	res := r.result(in.item, in.hash, rep)
	return res, sectionHits(in.item.JobID, res.ID, in.modality, rep, seq), nil
}

// evaluateMedia evaluates a video or audio item: the analyzer stages,
// segments and transcribes it and calls eval for every frame and chunk; the
// result carries the merged report and the timed hits. The content hash is
// the one of submission or, for a URL, the analyzer's hash of what it
// fetched.
func (r *ItemRunner) evaluateMedia(ctx context.Context, it Item, eval EvaluateFunc, seq *int) (*domain.JobResult, []*domain.LabelHit, error) {
	media, ok := MediaInputOf(it.Content)
	if !ok {
		return nil, nil, fmt.Errorf("evaluateMedia: %s is not timed media", it.Content.Kind)
	}
	if r.cfg.Media == nil {
		return nil, nil, &ItemError{Index: it.Index, Job: domain.ErrJobNoMedia, Err: domain.Errorf(domain.Unimplemented, "%s", domain.ErrJobNoMedia.Message)}
	}
	var pre domain.FramePrecheck
	if r.cfg.MediaPrecheck != nil {
		pre = r.cfg.MediaPrecheck(it.AccountID, it.JobID)
	}
	res, err := r.cfg.Media.AnalyzeMedia(ctx, media, pre, domain.MediaEvalFunc(eval))
	if err != nil {
		if e := mediaJobError(err); e != nil {
			return nil, nil, &ItemError{Index: it.Index, Job: *e, Err: err}
		}
		return nil, nil, err
	}
	hash := it.ContentHash
	if hash == "" {
		hash = res.ContentHash
	}
	hits, cut := LimitTimedHits(res.Hits)
	if cut && res.Report != nil {
		res.Report.HitsTruncated = true
	}
	if pre != nil {
		res.Report = withPrecheck(res.Report, pre.PrecheckMatches())
	}
	jr := r.result(it, hash, res.Report)
	return jr, TimedLabelHits(it.JobID, jr.ID, hits, seq), nil
}

// withPrecheck is rep with the precheck's matches, a copy when there are
// any: an evaluation may hand the same report to several items.
func withPrecheck(rep *rules.Report, matches []rules.PrecheckMatch) *rules.Report {
	if rep == nil || len(matches) == 0 {
		return rep
	}
	cp := *rep
	cp.Precheck = matches
	return &cp
}

func (r *ItemRunner) result(it Item, hash string, rep *rules.Report) *domain.JobResult {
	return &domain.JobResult{
		ID: domain.NewID(), JobID: it.JobID, Index: it.Index, ContentHash: hash,
		Metadata: it.Content.Metadata, Report: rep, Created: r.cfg.Now(),
	}
}
