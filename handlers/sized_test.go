package handlers

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/gen"
)

// The hot job responses carry a Content-Length and the very bytes the
// generated Visit methods write (HTML escaping and trailing newline
// included), for bodies above and below net/http's chunking threshold.
func TestSizedJobResponses(t *testing.T) {
	t.Parallel()
	big := make([]byte, 8<<10)
	for i := range big {
		big[i] = 'x'
	}
	for _, id := range []string{"<small & html>", string(big)} {
		job := gen.Job{JobUuid: id}
		cases := []struct {
			name       string
			ours, gens func(http.ResponseWriter) error
		}{
			{"createJob", createJobResponse{Job: job}.VisitCreateJobResponse, gen.CreateJob200JSONResponse{Job: job}.VisitCreateJobResponse},
			{"getJob", getJobResponse{Job: job}.VisitGetJobResponse, gen.GetJob200JSONResponse{Job: job}.VisitGetJobResponse},
		}
		for _, tc := range cases {
			ours, gens := httptest.NewRecorder(), httptest.NewRecorder()
			require.NoError(t, tc.ours(ours))
			require.NoError(t, tc.gens(gens))
			require.Equal(t, http.StatusOK, ours.Code, tc.name)
			require.Equal(t, gens.Body.String(), ours.Body.String(), tc.name)
			require.Equal(t, "application/json", ours.Header().Get("Content-Type"), tc.name)
			require.Equal(t, strconv.Itoa(ours.Body.Len()), ours.Header().Get("Content-Length"), tc.name)
		}
	}
}
