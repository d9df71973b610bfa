package domain

import (
	"context"
	"errors"
	"fmt"
)

// Code is a gRPC status code. The API maps each one to an HTTP status in one
// place (handlers), following the grpc-gateway table of docs/api.md#error-bodies.
type Code int32

// The gRPC codes the service uses.
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

var codeNames = map[Code]string{
	OK: "OK", Canceled: "CANCELED", Unknown: "UNKNOWN", InvalidArgument: "INVALID_ARGUMENT",
	DeadlineExceeded: "DEADLINE_EXCEEDED", NotFound: "NOT_FOUND", AlreadyExists: "ALREADY_EXISTS",
	PermissionDenied: "PERMISSION_DENIED", ResourceExhausted: "RESOURCE_EXHAUSTED",
	FailedPrecondition: "FAILED_PRECONDITION", Aborted: "ABORTED", OutOfRange: "OUT_OF_RANGE",
	Unimplemented: "UNIMPLEMENTED", Internal: "INTERNAL", Unavailable: "UNAVAILABLE",
	DataLoss: "DATA_LOSS", Unauthenticated: "UNAUTHENTICATED",
}

func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("CODE_%d", int32(c))
}

// Error is the one error type of the service. Message is always safe to show
// to a client; anything that is not an *Error becomes INTERNAL with a generic
// message at the API boundary.
type Error struct {
	Code    Code
	Message string
	Details []Detail
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Detail is one typed entry of Error.Details.
type Detail interface{ isDetail() }

// FieldViolation names one bad input field (google.rpc.BadRequest).
type FieldViolation struct {
	Field       string
	Description string
}

// BadRequest lists the fields that failed validation.
type BadRequest struct{ FieldViolations []FieldViolation }

// CompilationError is one rule-language compile error, 1-based position.
type CompilationError struct {
	Message string
	Line    int
	Column  int
}

// CompilationErrors lists every compile error of a rule text.
type CompilationErrors struct{ Errors []CompilationError }

// PrecheckFailure is the detail of a 499 precheck failure body (docs/api.md#error-bodies).
type PrecheckFailure struct {
	Type            PrecheckFailureType
	Message         string
	ContentHash     string
	MatchConfidence PrecheckMatchConfidence
	// The provenance of a hash-list match: the list, the list's hash that
	// matched, its distance, source and note; empty for other failures.
	ListID, ListName, Source, Note, MatchedHash string
	Distance                                    int
	// At is the time range of the frame that matched, of a video or an
	// animated image; nil for a still image.
	At *FrameSegment
}

func (BadRequest) isDetail()        {}
func (CompilationErrors) isDetail() {}
func (PrecheckFailure) isDetail()   {}

// PrecheckFailureType says why a precheck rejected content.
type PrecheckFailureType string

// Precheck failure types (the API's PrecheckFailureType).
const (
	PrecheckFailureUnspecified            PrecheckFailureType = "PRECHECK_FAILURE_TYPE_UNSPECIFIED"
	PrecheckFailureNCMEC                  PrecheckFailureType = "PRECHECK_FAILURE_TYPE_NCMEC"
	PrecheckFailureUnsupportedImageFormat PrecheckFailureType = "PRECHECK_FAILURE_TYPE_UNSUPPORTED_IMAGE_FORMAT"
	PrecheckFailureInvalidImage           PrecheckFailureType = "PRECHECK_FAILURE_TYPE_INVALID_IMAGE"
)

// PrecheckMatchConfidence is the band of a hash-list match.
type PrecheckMatchConfidence string

// Match confidences (the API's PrecheckMatchConfidence).
const (
	MatchConfidenceUnspecified PrecheckMatchConfidence = "PRECHECK_MATCH_CONFIDENCE_UNSPECIFIED"
	MatchConfidenceExact       PrecheckMatchConfidence = "PRECHECK_MATCH_CONFIDENCE_EXACT"
	MatchConfidenceHigh        PrecheckMatchConfidence = "PRECHECK_MATCH_CONFIDENCE_HIGH"
	MatchConfidenceMedium      PrecheckMatchConfidence = "PRECHECK_MATCH_CONFIDENCE_MEDIUM"
	MatchConfidenceLow         PrecheckMatchConfidence = "PRECHECK_MATCH_CONFIDENCE_LOW"
)

// Errorf returns an *Error with a formatted, client-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InvalidField returns INVALID_ARGUMENT naming one field.
func InvalidField(field, description string) *Error {
	return &Error{
		Code:    InvalidArgument,
		Message: "invalid " + field + ": " + description,
		Details: []Detail{BadRequest{FieldViolations: []FieldViolation{{Field: field, Description: description}}}},
	}
}

// ErrorCode returns the code of err: OK for nil, the code of a wrapped *Error,
// Canceled/DeadlineExceeded for context errors, INTERNAL otherwise.
func ErrorCode(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return OK
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return DeadlineExceeded
	}
	return Internal
}

// ErrorMessage returns the client-safe message of err.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// describeNotFound gives a NOT_FOUND error a specific message.
func DescribeNotFound(err error, format string, args ...any) error {
	if ErrorCode(err) == NotFound {
		return Errorf(NotFound, format, args...)
	}
	return err
}
