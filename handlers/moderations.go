package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/moderation"
	"github.com/contenteval/contenteval/gen"
	"github.com/labstack/echo/v4"
)

// moderationsPath is the one path whose errors use OpenAI's body.
const moderationsPath = "/v1/moderations"

// CreateModeration answers OpenAI's Moderation API
// (docs/api.md#openai-compatible-moderation).
func (s *Server) CreateModeration(ctx context.Context, req gen.CreateModerationRequestObject) (gen.CreateModerationResponseObject, error) {
	if s.deps.Moderation == nil {
		return nil, domain.Errorf(domain.Unimplemented, "moderation is not configured")
	}
	b := req.Body
	in, err := toModerationInputs(b.Input)
	if err != nil {
		return nil, err
	}
	res, err := s.deps.Moderation.Moderate(ctx, AccountFrom(ctx), moderation.Request{Model: deref(b.Model), Inputs: in})
	if err != nil {
		return nil, err
	}
	out := gen.CreateModeration200JSONResponse{Id: "modr-" + res.JobID, Model: res.Model, Results: make([]gen.ModerationResult, len(res.Results))}
	for i, r := range res.Results {
		types := make(map[string][]gen.ModerationResultCategoryAppliedInputTypes, len(r.AppliedInputTypes))
		for name, ks := range r.AppliedInputTypes {
			ts := make([]gen.ModerationResultCategoryAppliedInputTypes, len(ks))
			for j, k := range ks {
				ts[j] = gen.ModerationResultCategoryAppliedInputTypes(k)
			}
			types[name] = ts
		}
		failed := r.Failed
		if failed == nil {
			failed = []string{}
		}
		out.Results[i] = gen.ModerationResult{
			Flagged: r.Flagged, Categories: r.Categories, CategoryScores: r.Scores,
			CategoryAppliedInputTypes: types, FailedCategories: failed,
		}
	}
	return out, nil
}

// toModerationInputs splits OpenAI's input (a string, strings, or parts of
// one input) into the domain's inputs, naming each part's field.
func toModerationInputs(in gen.ModerationInput) ([]moderation.Input, error) {
	raw, err := in.MarshalJSON()
	raw = bytes.TrimSpace(raw)
	if err != nil || len(raw) == 0 {
		return nil, domain.InvalidField("input", "is required")
	}
	switch raw[0] {
	case '"':
		t, err := in.AsModerationInput0()
		if err != nil {
			return nil, domain.InvalidField("input", "must be a string, an array of strings or an array of parts")
		}
		return []moderation.Input{{{Text: &t, Field: "input"}}}, nil
	case '[':
	default:
		return nil, domain.InvalidField("input", "must be a string, an array of strings or an array of parts")
	}
	if ts, err := in.AsModerationInput1(); err == nil {
		out := make([]moderation.Input, len(ts))
		for i := range ts {
			out[i] = moderation.Input{{Text: &ts[i], Field: fmt.Sprintf("input[%d]", i)}}
		}
		return out, nil
	}
	ps, err := in.AsModerationInput2()
	if err != nil {
		return nil, domain.InvalidField("input", "must be a string, an array of strings or an array of parts")
	}
	parts := make(moderation.Input, len(ps))
	for i, p := range ps {
		switch p.Type {
		case gen.ModerationInputPartTypeText:
			if p.Text == nil {
				return nil, domain.InvalidField(fmt.Sprintf("input[%d].text", i), "is required for a text part")
			}
			parts[i] = moderation.Part{Text: p.Text, Field: fmt.Sprintf("input[%d].text", i)}
		case gen.ModerationInputPartTypeImageUrl:
			if p.ImageUrl == nil {
				return nil, domain.InvalidField(fmt.Sprintf("input[%d].image_url", i), "is required for an image_url part")
			}
			u := p.ImageUrl.Url
			parts[i] = moderation.Part{ImageURL: &u, Field: fmt.Sprintf("input[%d].image_url.url", i)}
		default:
			return nil, domain.InvalidField(fmt.Sprintf("input[%d].type", i), "must be text or image_url")
		}
	}
	return []moderation.Input{parts}, nil
}

// isModerationRequest reports whether c is a call of the OpenAI-compatible
// endpoint, whose errors use OpenAI's body.
func isModerationRequest(c echo.Context) bool {
	return strings.TrimSuffix(c.Request().URL.Path, "/") == moderationsPath
}

// openAIErrorBody is OpenAI's error body.
type openAIErrorBody struct {
	Error openAIError `json:"error"`
}

type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// openAIErrorOf is the status and OpenAI body of a domain error: the
// statuses OpenAI's SDKs map to their error classes. A precheck failure
// (CANCELED with its detail) is a 400: OpenAI has no 499.
func openAIErrorOf(de *domain.Error, rateLimited bool) (int, openAIErrorBody) {
	e := openAIError{Message: de.Message}
	str := func(s string) *string { return &s }
	status := httpStatus(de.Code)
	for _, d := range de.Details {
		switch d := d.(type) {
		case domain.BadRequest:
			if len(d.FieldViolations) > 0 && e.Param == nil {
				e.Param = str(d.FieldViolations[0].Field)
			}
		case domain.PrecheckFailure:
			status, e.Code = http.StatusBadRequest, str("content_blocked")
			if d.Message != "" {
				e.Message = de.Message + ": " + d.Message
			}
		}
	}
	switch {
	case status == 499:
		status = http.StatusBadRequest
	case status == http.StatusConflict:
		status = http.StatusBadRequest
	case status == http.StatusNotImplemented:
		status = http.StatusInternalServerError
	}
	switch status {
	case http.StatusBadRequest:
		e.Type = "invalid_request_error"
	case http.StatusUnauthorized:
		e.Type, e.Code = "authentication_error", str("invalid_api_key")
	case http.StatusForbidden:
		e.Type, e.Code = "permission_error", str("permission_denied")
	case http.StatusNotFound:
		e.Type, e.Code = "invalid_request_error", str("model_not_found")
		if e.Param == nil {
			e.Param = str("model")
		}
	case http.StatusTooManyRequests:
		e.Type, e.Code = "rate_limit_error", str("rate_limit_exceeded")
		if !rateLimited {
			e.Type, e.Code = "insufficient_quota", str("insufficient_quota")
		}
	case http.StatusMethodNotAllowed:
		e.Type = "invalid_request_error"
	default:
		e.Type = "server_error"
	}
	return status, openAIErrorBody{Error: e}
}

// writeOpenAIError writes err in OpenAI's shape (handleError on the
// moderation path).
func (s *Server) writeOpenAIError(c echo.Context, err error, de *domain.Error) {
	var ra retryAfterError
	rateLimited := errors.As(err, &ra)
	if rateLimited {
		c.Response().Header().Set("Retry-After", fmt.Sprint(ra.seconds))
	}
	status, body := openAIErrorOf(de, rateLimited)
	s.writeJSON(c, status, body)
}
