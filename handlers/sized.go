package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/contenteval/contenteval/gen"
)

// writeSizedJSON writes v as the generated Visit methods do (json.Encoder:
// HTML-escaped, a trailing newline), but with a Content-Length. Without one
// net/http sends a body larger than its 4 KiB buffer chunked: the body and
// the terminating chunk go out in two writes, so the client wakes twice per
// response. A job with its report is ~9 KiB, on the hottest endpoints.
func writeSizedJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}

// createJobResponse is gen.CreateJob200JSONResponse written by writeSizedJSON.
type createJobResponse gen.CreateJob200JSONResponse

func (r createJobResponse) VisitCreateJobResponse(w http.ResponseWriter) error {
	return writeSizedJSON(w, http.StatusOK, gen.CreateJob200JSONResponse(r))
}

// getJobResponse is gen.GetJob200JSONResponse written by writeSizedJSON.
type getJobResponse gen.GetJob200JSONResponse

func (r getJobResponse) VisitGetJobResponse(w http.ResponseWriter) error {
	return writeSizedJSON(w, http.StatusOK, gen.GetJob200JSONResponse(r))
}
