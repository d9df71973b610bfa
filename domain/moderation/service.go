package moderation

import (
	"context"
	"fmt"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/rules"
)

// Part is one part of an input: a text, or an image by URL (http(s) or
// data:).
type Part struct {
	Text     *string
	ImageURL *string
	// Field names the part in errors (input, input[2], input[1].text).
	Field string
}

// Input is one input of the request; it gets one result.
type Input []Part

// Request is OpenAI's Moderation request, already split into inputs.
type Request struct {
	Model  string
	Inputs []Input
}

// Result is the verdict on one input.
type Result struct {
	Flagged    bool
	Categories map[string]bool
	Scores     map[string]float64
	// AppliedInputTypes lists, per category, the input types ("text",
	// "image") it was evaluated on.
	AppliedInputTypes map[string][]string
	// Failed are the categories whose evaluation failed, sorted.
	Failed []string
}

// Response is the answer: JobID is the recorded job (the first one on
// label-first accounts), Model what the request named (or the default it
// resolved to).
type Response struct {
	JobID   string
	Model   string
	Results []Result
}

// Stores are the reads model resolution needs.
type Stores struct {
	Accounts domain.AccountStore
	Labels   domain.LabelStore
	Versions domain.LabelVersionStore
	Tags     domain.LabelTagStore
}

// Service answers moderation requests through the job and label
// evaluation services.
type Service struct {
	jobs      *jobs.Service
	labelEval *labels.EvaluationService
	policies  *policies.Service
	stores    Stores
	maxParts  int
}

// NewService returns the moderation service. maxParts is the most parts
// of one request: the most content entries of one job.
func NewService(js *jobs.Service, le *labels.EvaluationService, ps *policies.Service, stores Stores, maxParts int) *Service {
	if maxParts <= 0 {
		maxParts = 100
	}
	return &Service{jobs: js, labelEval: le, policies: ps, stores: stores, maxParts: maxParts}
}

// Moderate evaluates every input against what req.Model names. Codes:
// INVALID_ARGUMENT, NOT_FOUND (the model names nothing), RESOURCE_EXHAUSTED
// (daily quota), CANCELED (content that failed the precheck),
// DEADLINE_EXCEEDED (not done within the wait cap), INTERNAL.
func (s *Service) Moderate(ctx context.Context, account *domain.Account, req Request) (*Response, error) {
	parts, contents, owners, err := s.contents(req)
	if err != nil {
		return nil, err
	}
	t, err := s.resolve(ctx, account, req.Model)
	if err != nil {
		return nil, err
	}
	folds := make([]*fold, len(req.Inputs))
	for i := range folds {
		folds[i] = newFold()
	}
	resp := &Response{Model: t.name}
	if t.policy != nil {
		resp.JobID, err = s.moderatePolicy(ctx, account, t.policy, parts, contents, owners, folds)
	} else {
		resp.JobID, err = s.moderateLabels(ctx, account, t.versions, parts, contents, owners, folds)
	}
	if err != nil {
		return nil, err
	}
	for _, f := range folds {
		resp.Results = append(resp.Results, f.result())
	}
	return resp, nil
}

// contents flattens the inputs into job content entries: parts[k] is the
// k-th entry's part and owners[k] the index of its input.
func (s *Service) contents(req Request) ([]Part, []domain.ContentInput, []int, error) {
	if len(req.Inputs) == 0 {
		return nil, nil, nil, domain.InvalidField("input", "must not be empty")
	}
	var parts []Part
	var contents []domain.ContentInput
	var owners []int
	for i, in := range req.Inputs {
		if len(in) == 0 {
			return nil, nil, nil, domain.InvalidField("input", "must not be empty")
		}
		for _, p := range in {
			if len(parts) == s.maxParts {
				return nil, nil, nil, domain.InvalidField("input", fmt.Sprintf("has more than %d texts and images", s.maxParts))
			}
			c, err := partContent(p)
			if err != nil {
				return nil, nil, nil, err
			}
			parts, contents, owners = append(parts, p), append(contents, c), append(owners, i)
		}
	}
	return parts, contents, owners, nil
}

// partContent is the job content of a part: text, imageUrl (an http(s)
// URL) or image (the bytes of a data: URL).
func partContent(p Part) (domain.ContentInput, error) {
	switch {
	case p.Text != nil && p.ImageURL == nil:
		return domain.ContentInput{Text: p.Text}, nil
	case p.ImageURL != nil && p.Text == nil:
		u := *p.ImageURL
		if isDataURL(u) {
			b, err := parseDataURL(p.Field, u)
			if err != nil {
				return domain.ContentInput{}, err
			}
			return domain.ContentInput{Image: &b}, nil
		}
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return domain.ContentInput{}, domain.InvalidField(p.Field, "must be an http(s) or data: URL")
		}
		return domain.ContentInput{ImageURL: &u}, nil
	}
	return domain.ContentInput{}, domain.InvalidField(p.Field, "a part carries exactly one of text and image_url")
}

// kind is the OpenAI input type of a part.
func (p Part) kind() string {
	if p.ImageURL != nil {
		return "image"
	}
	return "text"
}

// moderatePolicy submits all parts as one job and waits for it, as
// POST /v1/jobs with waitForCompletion does.
func (s *Service) moderatePolicy(ctx context.Context, account *domain.Account, p *domain.Policy, parts []Part, contents []domain.ContentInput, owners []int, folds []*fold) (string, error) {
	j, err := s.jobs.Submit(ctx, account, jobs.Request{PolicyID: p.ID, Content: contents, Wait: true})
	if err != nil {
		return "", renameFields(err, parts)
	}
	if err := jobOutcome(j); err != nil {
		return "", err
	}
	each := func(r *domain.JobResult) error {
		if r.Index < 0 || r.Index >= len(parts) {
			return domain.Errorf(domain.Internal, "job %s has a result for entry %d of %d", j.ID, r.Index, len(parts))
		}
		if r.Error != nil {
			return domain.InvalidField(parts[r.Index].Field, r.Error.Message)
		}
		if r.Report == nil {
			return nil
		}
		f := folds[owners[r.Index]]
		for _, sec := range r.Report.Sections {
			f.add(sec.Name, sec.Result, sec.Score, parts[r.Index].kind())
		}
		return nil
	}
	if j.ResultsStored {
		err = s.jobs.EachResult(ctx, j.ID, each)
	} else {
		for _, r := range j.Results {
			if err = each(r); err != nil {
				break
			}
		}
	}
	return j.ID, err
}

// jobOutcome turns a job that did not complete into the error of the call.
func jobOutcome(j *domain.Job) error {
	switch j.Status {
	case domain.JobCompleted:
		return nil
	case domain.JobFailed, domain.JobCanceled:
		msg := "the evaluation failed"
		var reason domain.JobErrorReason
		if j.Error != nil {
			msg, reason = j.Error.Message, j.Error.Reason
		}
		switch reason {
		case domain.ReasonQuotaExceeded:
			return domain.Errorf(domain.ResourceExhausted, "%s", msg)
		case domain.ReasonContentBlocked, domain.ReasonContentPrecheckFailed:
			return domain.Errorf(domain.InvalidArgument, "%s", msg)
		case domain.ReasonExecutionDeadlineExceeded, domain.ReasonAdmissionQueueTimeout:
			return domain.Errorf(domain.DeadlineExceeded, "%s", msg)
		}
		return domain.Errorf(domain.Internal, "job %s: %s", j.ID, msg)
	}
	return domain.Errorf(domain.DeadlineExceeded, "job %s did not finish within the wait cap; read it with GET /v1/jobs/%s", j.ID, j.ID)
}

// moderateLabels evaluates every part against the label versions, up to
// ten versions a call, as POST /v1/labels/evaluate does.
func (s *Service) moderateLabels(ctx context.Context, account *domain.Account, versions []labelVersion, parts []Part, contents []domain.ContentInput, owners []int, folds []*fold) (string, error) {
	first := ""
	for k, c := range contents {
		for lo := 0; lo < len(versions); lo += labels.MaxLabelVersionsPerEvaluation {
			chunk := versions[lo:min(lo+labels.MaxLabelVersionsPerEvaluation, len(versions))]
			ids := make([]string, len(chunk))
			for i, v := range chunk {
				ids[i] = v.id
			}
			res, err := s.labelEval.Evaluate(ctx, account, labels.EvaluateLabelsRequest{Content: c, LabelVersionIDs: ids})
			if err != nil {
				return "", renameFields(err, parts[k:k+1])
			}
			for i, r := range res.Results {
				if first == "" && r.JobID != "" {
					first = r.JobID
				}
				switch {
				case r.Evaluation != nil:
					folds[owners[k]].add(chunk[i].label, r.Evaluation.Outcome, r.Evaluation.Score, parts[k].kind())
				default:
					folds[owners[k]].add(chunk[i].label, rules.OutcomeFailed, 0, parts[k].kind())
				}
			}
		}
	}
	if first == "" {
		return "", domain.Errorf(domain.NotFound, "no label of the model could be evaluated")
	}
	return first, nil
}

// renameFields names the request's fields in err's violations: the job
// services name content entries contentData[k] (or contentData for a
// single one).
func renameFields(err error, parts []Part) error {
	de, ok := err.(*domain.Error)
	if !ok {
		return err
	}
	out := *de
	out.Details = nil
	for _, d := range de.Details {
		br, ok := d.(domain.BadRequest)
		if !ok {
			out.Details = append(out.Details, d)
			continue
		}
		var vs []domain.FieldViolation
		for _, v := range br.FieldViolations {
			v.Field = renameField(v.Field, parts)
			vs = append(vs, v)
		}
		out.Details = append(out.Details, domain.BadRequest{FieldViolations: vs})
	}
	return &out
}

func renameField(field string, parts []Part) string {
	rest, ok := strings.CutPrefix(field, "contentData")
	if !ok {
		return field
	}
	k := 0
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return field
		}
		if _, err := fmt.Sscanf(rest[1:end], "%d", &k); err != nil {
			return field
		}
	}
	if k < 0 || k >= len(parts) {
		return field
	}
	return parts[k].Field
}
