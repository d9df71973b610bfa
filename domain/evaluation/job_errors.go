package evaluation

import (
	"errors"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// The one mapping of an item's failures to the job errors they end a job
// with (ItemRunner): an image's inspection, a media item's analysis.

// precheckFailure returns the PrecheckFailure detail of err, if it is a
// precheck rejection.
func precheckFailure(err error) (domain.PrecheckFailure, bool) {
	var e *domain.Error
	if !errors.As(err, &e) || e.Code != domain.Canceled {
		return domain.PrecheckFailure{}, false
	}
	for _, d := range e.Details {
		if pf, ok := d.(domain.PrecheckFailure); ok {
			return pf, true
		}
	}
	return domain.PrecheckFailure{}, false
}

// imageJobError maps an inspection error to the job error of an
// asynchronous job, or nil when err is not an image problem (then it is
// handled as any evaluation error).
func imageJobError(err error) *domain.JobError {
	if pf, ok := precheckFailure(err); ok {
		e := domain.ErrJobPrecheckFailed
		if pf.Type == domain.PrecheckFailureNCMEC {
			e = domain.ErrJobContentBlocked
		}
		return &e
	}
	var e domain.JobError
	switch domain.ErrorCode(err) {
	case domain.InvalidArgument:
		e = domain.ErrJobImageFetch
	case domain.FailedPrecondition:
		e = domain.ErrJobOCRUnavailable
	default:
		return nil
	}
	return &e
}

// reasoner is a precheck rejection that names its job error reason (the
// frame precheck adapter returns domain/precheck's *Blocked, which cannot be
// named here without an import cycle).
type reasoner interface{ Reason() string }

// mediaJobError maps an error of a media item's analysis to the job's
// terminal error, or nil when err is not a media failure (then it is handled
// as any evaluation error: deadline, shutdown, internal). With imageJobError
// it is the one mapping of item failures to job errors (ItemRunner).
func mediaJobError(err error) *domain.JobError {
	if err == nil {
		return nil
	}
	if me, ok := domain.MediaErrorOf(err); ok {
		e := me.JobError()
		return &e
	}
	var r reasoner
	if errors.As(err, &r) {
		var e domain.JobError
		switch domain.JobErrorReason(r.Reason()) {
		case domain.ReasonContentBlocked:
			e = domain.ErrJobContentBlocked
		case domain.ReasonContentPrecheckFailed:
			e = domain.ErrJobPrecheckFailed
		default:
			return nil
		}
		if m, ok := r.(interface{ JobMessage() string }); ok && m.JobMessage() != "" {
			e.Message = m.JobMessage() // with the time range of the frame
		}
		return &e
	}
	return imageJobError(err)
}

// RenameFields returns err with the field violations under from renamed to
// be under to (imageUrl -> contentData[2].imageUrl with from ""); other
// errors are returned as they are. It names an item's errors after the
// request field the item came from.
func RenameFields(err error, from, to string) error {
	var e *domain.Error
	if !errors.As(err, &e) || e.Code != domain.InvalidArgument {
		return err
	}
	out := &domain.Error{Code: e.Code, Message: e.Message}
	for _, d := range e.Details {
		if br, ok := d.(domain.BadRequest); ok {
			vs := make([]domain.FieldViolation, len(br.FieldViolations))
			for i, v := range br.FieldViolations {
				name := v.Field
				if strings.HasPrefix(name, from) {
					name = to + strings.TrimPrefix(name, from)
				}
				vs[i] = domain.FieldViolation{Field: name, Description: v.Description}
			}
			if len(vs) > 0 {
				out.Message = "invalid " + vs[0].Field + ": " + vs[0].Description
			}
			d = domain.BadRequest{FieldViolations: vs}
		}
		out.Details = append(out.Details, d)
	}
	return out
}
