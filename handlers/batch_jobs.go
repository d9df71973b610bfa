package handlers

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/batches"
	"github.com/contenteval/contenteval/gen"
)

// CreateBatchJob creates a batch job and returns its signed upload URL; a
// policy that does not exist is reported in `error`, not as a request
// error, as the contract says.
func (s *Server) CreateBatchJob(ctx context.Context, req gen.CreateBatchJobRequestObject) (gen.CreateBatchJobResponseObject, error) {
	body := req.Body
	in := batches.CreateRequest{PolicyID: body.PolicyId, Options: toDomainOptions(body.Options)}
	if body.Name != nil {
		in.Name = *body.Name
	}
	if body.WebhookUrl != nil {
		in.WebhookURL = *body.WebhookUrl
	}
	b, upload, err := s.deps.Batches.Create(ctx, AccountFrom(ctx), in)
	if err != nil {
		return nil, err
	}
	out := gen.CreateBatchJob200JSONResponse{BatchJobId: b.ID, Name: b.Name, Error: toAPIBatchError(b)}
	if u := batchFileURL(s.deps.PublicURL, upload, "input"); u != "" {
		out.InputFileUploadUrl = &u
	}
	return out, nil
}

// ListBatchJobs lists the account's batch jobs, optionally by ids and
// states (repeated parameters).
func (s *Server) ListBatchJobs(ctx context.Context, req gen.ListBatchJobsRequestObject) (gen.ListBatchJobsResponseObject, error) {
	var f domain.BatchFilter
	if req.Params.BatchJobIds != nil {
		f.IDs = *req.Params.BatchJobIds
	}
	if req.Params.States != nil {
		for _, st := range *req.Params.States {
			if st == gen.BATCHJOBSTATEUNSPECIFIED {
				continue
			}
			f.States = append(f.States, toDomainBatchState(st))
		}
	}
	bs, err := s.deps.Batches.List(ctx, AccountFrom(ctx), f)
	if err != nil {
		return nil, err
	}
	out := make([]gen.BatchJob, len(bs))
	for i, b := range bs {
		out[i] = s.toAPIBatchJob(ctx, b)
	}
	return gen.ListBatchJobs200JSONResponse{BatchJobs: out}, nil
}

// CancelBatchJob stops a batch job and returns the resulting state.
func (s *Server) CancelBatchJob(ctx context.Context, req gen.CancelBatchJobRequestObject) (gen.CancelBatchJobResponseObject, error) {
	b, err := s.deps.Batches.Cancel(ctx, AccountFrom(ctx), req.BatchJobId)
	if err != nil {
		return nil, err
	}
	return gen.CancelBatchJob200JSONResponse{BatchJobId: b.ID, State: toAPIBatchState(b.State), Error: toAPIBatchError(b)}, nil
}

// UploadBatchInput receives an input file at its signed URL.
func (s *Server) UploadBatchInput(ctx context.Context, req gen.UploadBatchInputRequestObject) (gen.UploadBatchInputResponseObject, error) {
	b, err := s.deps.Batches.Upload(ctx, req.BatchJobId, req.Params.Expires, req.Params.Signature, req.Body)
	if err != nil {
		return nil, err
	}
	out := s.toAPIBatchJob(ctx, b)
	return gen.UploadBatchInput200JSONResponse{BatchJob: out}, nil
}

// DownloadBatchOutput serves a completed batch's output at its signed URL.
func (s *Server) DownloadBatchOutput(ctx context.Context, req gen.DownloadBatchOutputRequestObject) (gen.DownloadBatchOutputResponseObject, error) {
	rc, size, err := s.deps.Batches.Download(ctx, req.BatchJobId, req.Params.Expires, req.Params.Signature)
	if err != nil {
		return nil, err
	}
	return gen.DownloadBatchOutput200ApplicationxNdjsonResponse{Body: rc, ContentLength: size}, nil
}

func toDomainBatchState(s gen.BatchJobState) domain.BatchState {
	return domain.BatchState(strings.ToLower(strings.TrimPrefix(string(s), "BATCH_JOB_STATE_")))
}

func toAPIBatchState(s domain.BatchState) gen.BatchJobState {
	return gen.BatchJobState("BATCH_JOB_STATE_" + strings.ToUpper(string(s)))
}

func toAPIBatchError(b *domain.BatchJob) *gen.BatchJobError {
	if b.ErrorCode == "" {
		return nil
	}
	code := gen.BatchJobErrorCode(b.ErrorCode)
	return &gen.BatchJobError{ErrorCode: code, ErrorMessage: b.ErrorMessage}
}

func (s *Server) toAPIBatchJob(ctx context.Context, b *domain.BatchJob) gen.BatchJob {
	return toAPIBatchJob(b, batchFileURL(s.deps.PublicURL, s.deps.Batches.OutputLink(ctx, b), "output"))
}

func toAPIBatchJob(b *domain.BatchJob, outputURL string) gen.BatchJob {
	out := gen.BatchJob{
		BatchJobId: b.ID, Name: b.Name, State: toAPIBatchState(b.State),
		CreatedAt: b.Created, UpdatedAt: b.Updated, PolicyId: b.PolicyID,
		PolicyVersionId: b.PolicyVersionID, ItemCount: int32(b.ItemCount),
		ProcessedCount: int32(b.ProcessedCount), FailedCount: int32(b.FailedCount),
		Error: toAPIBatchError(b),
	}
	if outputURL != "" {
		out.OutputFileUrl = &outputURL
	}
	return out
}

// BatchOutput renders batch output lines and batch webhook payloads in the
// API's shapes; cmd hands it to the domain (domain.BatchLineEncoder) and to
// the webhook deliverer.
type BatchOutput struct {
	// Batches gives the signed output link of the webhook payload; set it
	// after the service is built.
	Batches *batches.Service
	// PublicURL is the server's external base URL (Deps.PublicURL).
	PublicURL func() string
}

var _ batches.LineEncoder = (*BatchOutput)(nil)

// batchLine is one line of the output file (JSONL, input order).
type batchLine struct {
	RefID       string                `json:"refId"`
	JobUUID     string                `json:"jobUuid"`
	ContentHash string                `json:"contentHash,omitempty"`
	Status      *gen.JobStatus        `json:"status,omitempty"`
	Result      *gen.Outcome          `json:"result,omitempty"`
	Report      *gen.EvaluationReport `json:"report,omitempty"`
	Error       *gen.JobError         `json:"error,omitempty"`
}

// EncodeBatchLine renders one item's outcome.
func (o *BatchOutput) EncodeBatchLine(b *domain.BatchJob, item *domain.BatchOutcome) ([]byte, error) {
	l := batchLine{RefID: item.RefID, JobUUID: item.JobID, ContentHash: item.ContentHash}
	if item.JobStatus != "" {
		l.Status = ptr(toAPIJobStatus(item.JobStatus))
	}
	l.Error = toAPIJobError(item.JobError)
	if r := item.Result; r != nil {
		j := &domain.Job{ID: item.JobID, PolicyID: b.PolicyID, PolicyKey: b.PolicyKey, PolicyVersionID: b.PolicyVersionID}
		l.Report = toAPIReport(j, r)
		if l.Report != nil {
			l.Result = &l.Report.Result
		}
		if r.Error != nil {
			l.Error = toAPIJobError(r.Error)
		}
	}
	return json.Marshal(l)
}

// RenderBatchWebhook renders the payload of a batch job event:
// {"type", "batchJob": BatchJob} with the batch as it is now.
func (o *BatchOutput) RenderBatchWebhook(ctx context.Context, e *domain.WebhookEvent) ([]byte, error) {
	b, err := o.Batches.GetByID(ctx, e.SubjectID)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Type     string       `json:"type"`
		BatchJob gen.BatchJob `json:"batchJob"`
	}{e.Type, toAPIBatchJob(b, batchFileURL(o.PublicURL, o.Batches.OutputLink(ctx, b), "output"))})
}

// batchFileURL is the URL of a batch's file link: the blob store's
// presigned URL, or the API's endpoint of the file (input or output) under
// the external base URL with the link's signature; "" for no link.
func batchFileURL(publicURL func() string, l *batches.FileLink, file string) string {
	switch {
	case l == nil:
		return ""
	case l.Presigned != "":
		return l.Presigned
	}
	base := strings.TrimRight(publicURL(), "/")
	return base + "/v1/batch-jobs/" + url.PathEscape(l.BatchID) + "/" + file + "?" + l.Query.Encode()
}
