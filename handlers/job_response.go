package handlers

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen"
)

// jobResponse writes a job ({"job": …}, the body of CreateJob and GetJob)
// as the generated Visit methods would, byte for byte, but converts and
// encodes its results one at a time: a job of 100 large reports would
// otherwise be held three times over (the domain reports, their API
// copies, the whole encoded body). A body that fits sizedBodyBuffer goes
// out in one write with a Content-Length: without one net/http sends a
// body larger than its 4 KiB buffer chunked, the body and the terminating
// chunk in two writes, so the client wakes twice per response (a job with
// its report is ~9 KiB, on the hottest endpoints). A larger body is sent
// chunked as it is encoded. each, when set, reads the results of a job
// that did not hold them (domain.Job.ResultsStored).
type jobResponse struct {
	job  *domain.Job
	each func(func(*domain.JobResult) error) error
}

func (r jobResponse) VisitCreateJobResponse(w http.ResponseWriter) error {
	return writeJobJSON(w, r.job, r.each)
}

func (r jobResponse) VisitGetJobResponse(w http.ResponseWriter) error {
	return writeJobJSON(w, r.job, r.each)
}

// sizedBodyBuffer is the largest body jobResponse sends with a
// Content-Length.
const sizedBodyBuffer = 64 << 10

// resultsPlaceholder is where the results go in the encoded job: the
// field's own key with an empty list. No other key of a job is "results"
// and every string value is quoted, so it occurs once.
var resultsPlaceholder = []byte(`"results":[]`)

func writeJobJSON(w http.ResponseWriter, j *domain.Job, each func(func(*domain.JobResult) error) error) error {
	head := toAPIJobHead(j)
	if each == nil && j.Results != nil {
		each = func(fn func(*domain.JobResult) error) error {
			for _, r := range j.Results {
				if err := fn(r); err != nil {
					return err
				}
			}
			return nil
		}
	}
	withResults := j.Status == domain.JobCompleted && each != nil
	if withResults {
		head.Results = &[]gen.JobResult{}
	}
	b, err := json.Marshal(gen.CreateJobResponse{Job: head})
	if err != nil {
		return err
	}
	at := bytes.Index(b, resultsPlaceholder)
	if !withResults || at < 0 {
		return writeSizedBody(w, append(b, '\n'))
	}
	at += len(resultsPlaceholder) - 1 // before the list's closing bracket
	out := &sizedWriter{w: w}
	_, _ = out.Write(b[:at])
	n := 0
	err = each(func(r *domain.JobResult) error {
		if n > 0 {
			_, _ = out.Write([]byte{','})
		}
		n++
		rb, err := json.Marshal(toAPIJobResult(j, r))
		if err != nil {
			return err
		}
		_, err = out.Write(rb)
		return err
	})
	if err != nil {
		return err
	}
	_, _ = out.Write(b[at:])
	_, _ = out.Write([]byte{'\n'})
	return out.Close()
}

// writeSizedBody writes a JSON body whole, with its Content-Length.
func writeSizedBody(w http.ResponseWriter, b []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	return err
}

// sizedWriter holds a 200 JSON body until it passes sizedBodyBuffer (then
// it is sent as it comes, through a buffer of that size) or is closed
// (then it is sent whole with a Content-Length).
type sizedWriter struct {
	w   http.ResponseWriter
	buf []byte
	out *bufio.Writer // set once the headers are sent
	err error
}

func (s *sizedWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.out == nil {
		if len(s.buf)+len(p) <= sizedBodyBuffer {
			s.buf = append(s.buf, p...)
			return len(p), nil
		}
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(http.StatusOK)
		s.out = bufio.NewWriterSize(s.w, sizedBodyBuffer)
		_, s.err = s.out.Write(s.buf)
		s.buf = nil
	}
	if s.err == nil {
		_, s.err = s.out.Write(p)
	}
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
}

// Close sends what is held.
func (s *sizedWriter) Close() error {
	if s.err != nil {
		return s.err
	}
	if s.out == nil {
		return writeSizedBody(s.w, s.buf)
	}
	return s.out.Flush()
}
