package domain

import (
	"context"
	"errors"

	"github.com/contenteval/contenteval/domain/rules"
)

// Precheck job error reasons (SPEC.md Errors).
const (
	ReasonContentBlocked        JobErrorReason = "JOB_ERROR_REASON_CONTENT_BLOCKED"
	ReasonContentPrecheckFailed JobErrorReason = "JOB_ERROR_REASON_CONTENT_PRECHECK_FAILED"
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
}

// ImageInspector fetches (imageUrl), prechecks and analyses one image entry
// (domain/precheck implements it). Errors: a precheck failure is CANCELED
// with a PrecheckFailure detail (the 499 body of synchronous calls); a URL
// that cannot be fetched is INVALID_ARGUMENT; OCR requested but missing is
// FAILED_PRECONDITION.
type ImageInspector interface {
	InspectImage(ctx context.Context, accountID, jobID string, item ContentItem, options map[string]string) (*InspectedImage, error)
}

// precheckFailure returns the PrecheckFailure detail of err, if it is a
// precheck rejection.
func precheckFailure(err error) (PrecheckFailure, bool) {
	var e *Error
	if !errors.As(err, &e) || e.Code != Canceled {
		return PrecheckFailure{}, false
	}
	for _, d := range e.Details {
		if pf, ok := d.(PrecheckFailure); ok {
			return pf, true
		}
	}
	return PrecheckFailure{}, false
}

// imageJobError maps an inspection error to the job error of an
// asynchronous job, or nil when err is not an image problem (then it is
// handled as any evaluation error).
func imageJobError(err error) *JobError {
	if pf, ok := precheckFailure(err); ok {
		e := ErrJobPrecheckFailed
		if pf.Type == PrecheckFailureNCMEC {
			e = ErrJobContentBlocked
		}
		return &e
	}
	var e JobError
	switch ErrorCode(err) {
	case InvalidArgument:
		e = ErrJobImageFetch
	case FailedPrecondition:
		e = ErrJobOCRUnavailable
	default:
		return nil
	}
	return &e
}

// withFieldPrefix returns err with its field violations renamed under prefix
// (imageUrl -> contentData[2].imageUrl); other errors are returned as is.
func withFieldPrefix(err error, prefix string) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != InvalidArgument {
		return err
	}
	out := &Error{Code: e.Code, Message: e.Message}
	for _, d := range e.Details {
		if br, ok := d.(BadRequest); ok {
			vs := make([]FieldViolation, len(br.FieldViolations))
			for i, v := range br.FieldViolations {
				vs[i] = FieldViolation{Field: prefix + v.Field, Description: v.Description}
			}
			d = BadRequest{FieldViolations: vs}
			if len(vs) > 0 {
				out.Message = "invalid " + vs[0].Field + ": " + vs[0].Description
			}
		}
		out.Details = append(out.Details, d)
	}
	return out
}
