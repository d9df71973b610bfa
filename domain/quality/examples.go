package quality

import (
	"context"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/paging"
)

// NewExample is one example of CreateExamples.
type NewExample struct {
	Content  domain.ContentInput
	Expected domain.EvaluationResult
	Note     string
}

// ExamplePage is one page of ListExamples.
type ExamplePage struct {
	Examples      []*domain.DatasetExample
	NextPageToken string
}

// CreateExamples adds examples to a label of the account, all or none.
// Text is stored as given; an image (bytes, or an imageUrl fetched now) is
// prechecked and stored as bytes with its content hash. An image the
// precheck refuses fails the whole call with its CANCELED status (the 499
// body) and nothing is stored. Codes: NOT_FOUND (label), INVALID_ARGUMENT
// naming examples[i] (bad content, outcome or note; more than 1,000 per
// call or 10,000 per label), CANCELED (precheck).
func (s *Service) CreateExamples(ctx context.Context, account *domain.Account, labelID string, in []NewExample) ([]*domain.DatasetExample, error) {
	switch n := len(in); {
	case n == 0:
		return nil, domain.InvalidField("examples", "must have at least one example")
	case n > domain.MaxExamplesPerCall:
		return nil, domain.InvalidField("examples", "has "+strconv.Itoa(n)+" examples; at most "+strconv.Itoa(domain.MaxExamplesPerCall)+" per call")
	}
	now := s.d.Clock.Now()
	out := make([]*domain.DatasetExample, len(in))
	for i, e := range in {
		field := "examples[" + strconv.Itoa(i) + "]"
		if e.Expected != domain.EvaluationResultTrue && e.Expected != domain.EvaluationResultFalse {
			return nil, domain.InvalidField(field+".expectedOutcome", "must be EVALUATION_RESULT_TRUE or EVALUATION_RESULT_FALSE")
		}
		if len([]rune(e.Note)) > domain.MaxExampleNote {
			return nil, domain.InvalidField(field+".note", "must be at most "+strconv.Itoa(domain.MaxExampleNote)+" characters")
		}
		items, sums, err := jobs.ValidateContent([]domain.ContentInput{e.Content}, 1, s.cfg.MaxTextBytes)
		if err != nil {
			return nil, evaluation.RenameFields(err, "contentData[0]", field+".contentData")
		}
		switch items[0].Kind {
		case domain.ContentText, domain.ContentImage, domain.ContentImageURL:
		default:
			return nil, domain.InvalidField(field+".contentData", "examples take text or image content (image or imageUrl); got "+string(items[0].Kind))
		}
		out[i] = &domain.DatasetExample{ID: domain.NewID(), AccountID: account.ID, LabelID: labelID,
			Content: items[0], ContentHash: sums[0].ContentHash, Expected: e.Expected, Note: e.Note, Created: now}
	}
	// The label is checked before the images are fetched and prechecked:
	// an unknown label costs no work.
	if _, err := s.d.Labels.GetLabel(ctx, account.ID, labelID); err != nil {
		return nil, domain.DescribeNotFound(err, "label %q not found", labelID)
	}
	for i, e := range out {
		if e.Content.Kind == domain.ContentText {
			continue
		}
		if err := s.storeableImage(ctx, account.ID, e, "examples["+strconv.Itoa(i)+"].contentData"); err != nil {
			return nil, err
		}
	}
	if err := s.d.Datasets.CreateExamples(ctx, account.ID, labelID, out, domain.MaxExamplesPerLabel); err != nil {
		return nil, domain.DescribeNotFound(err, "label %q not found", labelID)
	}
	return out, nil
}

// storeableImage turns an image example into the bytes that are stored:
// an imageUrl is fetched, and the bytes pass the precheck (a refusal is
// returned as the precheck's CANCELED status). OCR is not run: it is the
// evaluation's business.
func (s *Service) storeableImage(ctx context.Context, accountID string, e *domain.DatasetExample, field string) error {
	if s.d.Images == nil {
		return domain.Errorf(domain.Unimplemented, "image examples are not available on this server")
	}
	if e.Content.Kind == domain.ContentImageURL {
		if s.d.FetchImage == nil {
			return domain.InvalidField(field+".imageUrl", "fetching image URLs is not configured")
		}
		body, err := s.d.FetchImage(ctx, e.Content.URL)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return domain.InvalidField(field+".imageUrl", "the image could not be fetched: "+err.Error())
		}
		e.Content = domain.ContentItem{Kind: domain.ContentImage, Bytes: body, Metadata: e.Content.Metadata}
	}
	img, err := s.d.Images.InspectImage(ctx, accountID, "", e.Content, map[string]string{"ocr": "false"})
	if err != nil {
		return evaluation.RenameFields(err, "", field+".")
	}
	e.ContentHash = img.ContentHash
	return nil
}

// ListExamples returns a page of a label's examples, oldest first. A page
// holds fewer examples than asked rather than more than 16 MiB of content;
// the token then continues after the last one. Codes: NOT_FOUND (label),
// INVALID_ARGUMENT (page size or token).
func (s *Service) ListExamples(ctx context.Context, account *domain.Account, labelID string, pageSize *int32, pageToken string) (*ExamplePage, error) {
	type cursor struct {
		ID string `json:"i"`
	}
	q := paging.Query{SizeField: "page_size", TokenField: "page_token", Size: pageSize, Token: pageToken,
		Default: domain.DefaultExamplesPage, Max: domain.MaxExamplesPage, Scope: "examples\x00" + account.ID + "\x00" + labelID}
	es, next, err := paging.KeysetBounded(s.d.Tokens, q,
		func() error {
			_, err := s.d.Labels.GetLabel(ctx, account.ID, labelID)
			return domain.DescribeNotFound(err, "label %q not found", labelID)
		},
		func(after *cursor, size int) ([]*domain.DatasetExample, bool, error) {
			afterID := ""
			if after != nil {
				afterID = after.ID
			}
			return s.d.Datasets.ListExamples(ctx, account.ID, labelID, afterID, size, domain.MaxExamplesPageBytes)
		},
		func(e *domain.DatasetExample) cursor { return cursor{ID: e.ID} })
	if err != nil {
		return nil, err
	}
	return &ExamplePage{Examples: es, NextPageToken: next}, nil
}

// DeleteExample deletes an example of a label. Runs keep their results of
// it; runs not yet at it count it as failed. Codes: NOT_FOUND.
func (s *Service) DeleteExample(ctx context.Context, account *domain.Account, labelID, id string) error {
	return s.d.Datasets.DeleteExample(ctx, account.ID, labelID, id)
}
