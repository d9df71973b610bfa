package domain

import (
	"context"

	"github.com/contenteval/contenteval/domain/rules"
)

// The fixed job errors of images.
var (
	ErrJobContentBlocked = JobError{ReasonContentBlocked, "A pre-evaluation content check rejected the content."}
	ErrJobPrecheckFailed = JobError{ReasonContentPrecheckFailed, "The pre-evaluation content check could not be completed: an image is invalid, corrupted or in an unsupported format, or the check could not run."}
	ErrJobImageFetch     = JobError{ReasonJobFailed, "An image URL could not be fetched: it was unreachable, refused, too large, or not allowed (private addresses are refused)."}
	ErrJobOCRUnavailable = JobError{ReasonJobFailed, "OCR was requested but is not available on this server (tesseract is not installed)."}
)

// InspectedImage is an image that passed the precheck, with what the rule
// engine needs of it.
type InspectedImage struct {
	ContentHash string
	Features    rules.ImageFeatures
	// Text is what OCR read, when OCR was requested ("" otherwise).
	Text string
	// OCR reports whether Text comes from OCR: without it, text signals on
	// the image score -1 (FAILED), never a silent FALSE.
	OCR bool
	// Encoded and MediaType are the image as fetched, for model backends
	// that see images.
	Encoded   []byte
	MediaType string
	// PrecheckMatches are the hash-list matches that let the image through
	// (SHADOW lists), for the report.
	PrecheckMatches []rules.PrecheckMatch
}

// ImageInspector fetches (imageUrl), prechecks and analyses one image entry
// (domain/precheck implements it). Errors: a precheck failure is CANCELED
// with a PrecheckFailure detail (the 499 body of synchronous calls); a URL
// that cannot be fetched is INVALID_ARGUMENT; OCR requested but missing is
// FAILED_PRECONDITION.
type ImageInspector interface {
	InspectImage(ctx context.Context, accountID, jobID string, item ContentItem, options map[string]string) (*InspectedImage, error)
}
