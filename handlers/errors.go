package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

// httpStatus is the grpc-gateway mapping of docs/api.md#error-bodies.
func httpStatus(c domain.Code) int {
	switch c {
	case domain.OK:
		return http.StatusOK
	case domain.Canceled:
		return 499
	case domain.InvalidArgument, domain.FailedPrecondition, domain.OutOfRange:
		return http.StatusBadRequest
	case domain.Unauthenticated:
		return http.StatusUnauthorized
	case domain.PermissionDenied:
		return http.StatusForbidden
	case domain.NotFound:
		return http.StatusNotFound
	case domain.AlreadyExists, domain.Aborted:
		return http.StatusConflict
	case domain.ResourceExhausted:
		return http.StatusTooManyRequests
	case domain.Unimplemented:
		return http.StatusNotImplemented
	case domain.Unavailable:
		return http.StatusServiceUnavailable
	case domain.DeadlineExceeded:
		return http.StatusGatewayTimeout
	default:
		return http.StatusInternalServerError
	}
}

// statusBody is the JSON of the Status schema.
type statusBody struct {
	Code    int32            `json:"code"`
	Message string           `json:"message"`
	Details []map[string]any `json:"details,omitempty"`
}

// retryAfterError carries the wait of a 429 to the funnel.
type retryAfterError struct {
	err     *domain.Error
	seconds int
}

func (e retryAfterError) Error() string { return e.err.Error() }
func (e retryAfterError) Unwrap() error { return e.err }

// errorBody turns a domain error into the wire body for its code.
func errorBody(e *domain.Error) any {
	switch e.Code {
	case domain.ResourceExhausted:
		return statusBody{Code: int32(e.Code), Message: e.Message}
	}
	b := statusBody{Code: int32(e.Code), Message: e.Message}
	for _, d := range e.Details {
		b.Details = append(b.Details, detailJSON(d))
	}
	return b
}

func detailJSON(d domain.Detail) map[string]any {
	switch d := d.(type) {
	case domain.BadRequest:
		vs := make([]map[string]string, 0, len(d.FieldViolations))
		for _, v := range d.FieldViolations {
			vs = append(vs, map[string]string{"field": v.Field, "description": v.Description})
		}
		return map[string]any{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": vs}
	case domain.CompilationErrors:
		es := make([]map[string]any, 0, len(d.Errors))
		for _, e := range d.Errors {
			es = append(es, map[string]any{"message": e.Message, "line": e.Line, "column": e.Column})
		}
		return map[string]any{"@type": "type.googleapis.com/contenteval.CompilationErrors", "errors": es}
	case domain.PrecheckFailure:
		// @type lets the same detail stand in a Status body (stream error
		// lines) as well as in the 499 precheck failure body.
		m := map[string]any{"@type": "type.googleapis.com/contenteval.PrecheckFailure",
			"type": string(d.Type), "message": d.Message, "details": map[string]any{"contentHash": d.ContentHash}}
		if d.MatchConfidence != "" {
			m["matchConfidence"] = string(d.MatchConfidence)
		}
		if d.ListID != "" {
			m["listId"], m["listName"], m["source"], m["note"] = d.ListID, d.ListName, d.Source, d.Note
			m["matchedHash"], m["distance"] = d.MatchedHash, d.Distance
		}
		if d.At != nil {
			m["frameStartMs"] = strconv.FormatInt(d.At.StartMs, 10)
			m["frameEndMs"] = strconv.FormatInt(d.At.EndMs, 10)
		}
		return m
	}
	return map[string]any{"@type": "type.googleapis.com/google.protobuf.Empty"}
}

var (
	errNoRoute          = &domain.Error{Code: domain.NotFound, Message: "no such route"}
	errMethodNotAllowed = &domain.Error{Code: domain.Unimplemented, Message: "method not allowed"}
)

// toDomainError classifies any error reaching the funnel. The second result is
// false for errors whose text must not reach the client (they are logged).
func toDomainError(err error) (*domain.Error, bool) {
	var de *domain.Error
	if errors.As(err, &de) {
		return de, true
	}
	if errors.Is(err, context.Canceled) {
		return &domain.Error{Code: domain.Canceled, Message: "request canceled"}, true
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &domain.Error{Code: domain.DeadlineExceeded, Message: "deadline exceeded"}, true
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		if he.Internal != nil {
			if de, ok := toDomainError(he.Internal); ok && de.Code != domain.Internal {
				return de, true
			}
		}
		switch he.Code {
		case http.StatusNotFound:
			return errNoRoute, true
		case http.StatusMethodNotAllowed:
			return errMethodNotAllowed, true
		case http.StatusRequestEntityTooLarge:
			return domain.InvalidField("body", "request body is too large"), true
		case http.StatusUnsupportedMediaType:
			return domain.InvalidField("body", "unsupported content type; send application/json"), true
		case http.StatusBadRequest:
			// Echo's binder: a body that is not the JSON the operation expects.
			return domain.InvalidField("body", bindErrorText(he)), true
		case http.StatusUnauthorized:
			return domain.Errorf(domain.Unauthenticated, "missing, malformed, expired or revoked API key"), true
		case http.StatusServiceUnavailable:
			return domain.Errorf(domain.Unavailable, "service unavailable"), true
		}
	}
	return &domain.Error{Code: domain.Internal, Message: "internal error"}, false
}

func bindErrorText(he *echo.HTTPError) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(he.Internal, &se):
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	case errors.As(he.Internal, &te):
		return fmt.Sprintf("field %q has the wrong type", te.Field)
	}
	return "malformed request body"
}

// handleError is the one error funnel (e.HTTPErrorHandler): every failure,
// from routing, validation, auth, handlers or panics, is written here.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	de, known := toDomainError(err)
	if !known || de.Code == domain.Internal {
		s.log.Error("request failed", "request_id", requestID(c), "method", c.Request().Method,
			"path", c.Request().URL.Path, "error", err.Error())
	}
	if de == errNoRoute || de == errMethodNotAllowed {
		// Echo's catch-all group routes answer 404 for a known path with an
		// unknown method too; tell the two apart here.
		if allowed := s.allowedMethods(c.Request().URL.Path); len(allowed) > 0 {
			c.Response().Header().Set(echo.HeaderAllow, strings.Join(allowed, ", "))
			if isModerationRequest(c) {
				s.writeJSON(c, http.StatusMethodNotAllowed, openAIErrorBody{Error: openAIError{
					Message: errMethodNotAllowed.Message, Type: "invalid_request_error"}})
				return
			}
			s.writeJSON(c, http.StatusMethodNotAllowed, errorBody(errMethodNotAllowed))
			return
		}
		de = errNoRoute
	}
	if isModerationRequest(c) {
		// Every error of the OpenAI-compatible endpoint, from the
		// validator and authentication as well as the handler, is in
		// OpenAI's shape, so OpenAI's SDKs raise their own error classes.
		s.writeOpenAIError(c, err, de)
		return
	}
	var ra retryAfterError
	if errors.As(err, &ra) {
		c.Response().Header().Set("Retry-After", fmt.Sprint(ra.seconds))
	}
	s.writeJSON(c, httpStatus(de.Code), errorBody(de))
}

func (s *Server) writeJSON(c echo.Context, status int, body any) {
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(status)
	} else {
		werr = c.JSON(status, body)
	}
	if werr != nil {
		s.log.Warn("writing error response", "request_id", requestID(c), "error", werr.Error())
	}
}

// validationError turns the kin-openapi validator's errors into
// INVALID_ARGUMENT with one field violation per problem.
func validationError(me openapi3.MultiError) *echo.HTTPError {
	var violations []domain.FieldViolation
	var collect func(err error)
	collect = func(err error) {
		var multi openapi3.MultiError
		var reqErr *openapi3filter.RequestError
		var schemaErr *openapi3.SchemaError
		switch {
		case isMulti(err):
			for _, e := range err.(openapi3.MultiError) {
				collect(e)
			}
		case errors.As(err, &reqErr):
			field := "body"
			if reqErr.Parameter != nil {
				field = reqErr.Parameter.Name
			}
			if errors.As(reqErr.Err, &schemaErr) {
				violations = append(violations, schemaViolation(field, reqErr.Parameter == nil, schemaErr))
				return
			}
			if errors.As(reqErr.Err, &multi) {
				for _, e := range multi {
					if errors.As(e, &schemaErr) {
						violations = append(violations, schemaViolation(field, reqErr.Parameter == nil, schemaErr))
					} else {
						violations = append(violations, domain.FieldViolation{Field: field, Description: firstLine(e.Error())})
					}
				}
				return
			}
			desc := reqErr.Reason
			if desc == "" && reqErr.Err != nil {
				desc = firstLine(reqErr.Err.Error())
			}
			violations = append(violations, domain.FieldViolation{Field: field, Description: desc})
		case errors.As(err, &schemaErr):
			violations = append(violations, schemaViolation("body", true, schemaErr))
		default:
			violations = append(violations, domain.FieldViolation{Field: "request", Description: firstLine(err.Error())})
		}
	}
	collect(me)
	sort.SliceStable(violations, func(i, j int) bool { return violations[i].Field < violations[j].Field })
	msg := "invalid request"
	if len(violations) > 0 {
		msg = "invalid " + violations[0].Field + ": " + violations[0].Description
	}
	return &echo.HTTPError{Code: http.StatusBadRequest, Internal: &domain.Error{
		Code: domain.InvalidArgument, Message: msg,
		Details: []domain.Detail{domain.BadRequest{FieldViolations: violations}},
	}}
}

// isMulti is a type check, not errors.As: a RequestError unwraps to the
// MultiError of its schema errors, and must be read as itself to keep the
// parameter's name.
func isMulti(err error) bool {
	_, ok := err.(openapi3.MultiError)
	return ok
}

// schemaViolation names the field as a dotted path (contentData[0].text).
func schemaViolation(field string, inBody bool, se *openapi3.SchemaError) domain.FieldViolation {
	if inBody {
		var b strings.Builder
		for _, p := range se.JSONPointer() {
			if isIndex(p) {
				b.WriteString("[" + p + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p)
		}
		if b.Len() > 0 {
			field = b.String()
		}
	}
	desc := se.Reason
	if desc == "" {
		desc = firstLine(se.Error())
	}
	return domain.FieldViolation{Field: field, Description: desc}
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
