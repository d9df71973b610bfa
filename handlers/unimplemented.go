package handlers

import (
	"context"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen"
)

// notImplemented answers operations whose issue is not done yet: an honest
// 501, never a fake success.
func notImplemented(operationID string) error {
	return domain.Errorf(domain.Unimplemented, "%s is not implemented yet", operationID)
}

// ListBatchJobs is not implemented yet.
func (s *Server) ListBatchJobs(_ context.Context, _ gen.ListBatchJobsRequestObject) (gen.ListBatchJobsResponseObject, error) {
	return nil, notImplemented("listBatchJobs")
}

// CreateBatchJob is not implemented yet.
func (s *Server) CreateBatchJob(_ context.Context, _ gen.CreateBatchJobRequestObject) (gen.CreateBatchJobResponseObject, error) {
	return nil, notImplemented("createBatchJob")
}

// CancelBatchJob is not implemented yet.
func (s *Server) CancelBatchJob(_ context.Context, _ gen.CancelBatchJobRequestObject) (gen.CancelBatchJobResponseObject, error) {
	return nil, notImplemented("cancelBatchJob")
}

// UploadBatchInput is not implemented yet.
func (s *Server) UploadBatchInput(_ context.Context, _ gen.UploadBatchInputRequestObject) (gen.UploadBatchInputResponseObject, error) {
	return nil, notImplemented("uploadBatchInput")
}

// DownloadBatchOutput is not implemented yet.
func (s *Server) DownloadBatchOutput(_ context.Context, _ gen.DownloadBatchOutputRequestObject) (gen.DownloadBatchOutputResponseObject, error) {
	return nil, notImplemented("downloadBatchOutput")
}

// ListJobs is not implemented yet.
func (s *Server) ListJobs(_ context.Context, _ gen.ListJobsRequestObject) (gen.ListJobsResponseObject, error) {
	return nil, notImplemented("listJobs")
}

// CreateJob is not implemented yet.
func (s *Server) CreateJob(_ context.Context, _ gen.CreateJobRequestObject) (gen.CreateJobResponseObject, error) {
	return nil, notImplemented("createJob")
}

// StreamJobs is not implemented yet.
func (s *Server) StreamJobs(_ context.Context, _ gen.StreamJobsRequestObject) (gen.StreamJobsResponseObject, error) {
	return nil, notImplemented("streamJobs")
}

// GetJob is not implemented yet.
func (s *Server) GetJob(_ context.Context, _ gen.GetJobRequestObject) (gen.GetJobResponseObject, error) {
	return nil, notImplemented("getJob")
}

// ListFeedback is not implemented yet.
func (s *Server) ListFeedback(_ context.Context, _ gen.ListFeedbackRequestObject) (gen.ListFeedbackResponseObject, error) {
	return nil, notImplemented("listFeedback")
}

// CreateFeedback is not implemented yet.
func (s *Server) CreateFeedback(_ context.Context, _ gen.CreateFeedbackRequestObject) (gen.CreateFeedbackResponseObject, error) {
	return nil, notImplemented("createFeedback")
}

// ListJobLabelHits is not implemented yet.
func (s *Server) ListJobLabelHits(_ context.Context, _ gen.ListJobLabelHitsRequestObject) (gen.ListJobLabelHitsResponseObject, error) {
	return nil, notImplemented("listJobLabelHits")
}

// EvaluateLabels is not implemented yet.
func (s *Server) EvaluateLabels(_ context.Context, _ gen.EvaluateLabelsRequestObject) (gen.EvaluateLabelsResponseObject, error) {
	return nil, notImplemented("evaluateLabels")
}

// ListPolicies is not implemented yet.
func (s *Server) ListPolicies(_ context.Context, _ gen.ListPoliciesRequestObject) (gen.ListPoliciesResponseObject, error) {
	return nil, notImplemented("listPolicies")
}

// CreatePolicy is not implemented yet.
func (s *Server) CreatePolicy(_ context.Context, _ gen.CreatePolicyRequestObject) (gen.CreatePolicyResponseObject, error) {
	return nil, notImplemented("createPolicy")
}

// GetPolicy is not implemented yet.
func (s *Server) GetPolicy(_ context.Context, _ gen.GetPolicyRequestObject) (gen.GetPolicyResponseObject, error) {
	return nil, notImplemented("getPolicy")
}

// ListPolicyVersions is not implemented yet.
func (s *Server) ListPolicyVersions(_ context.Context, _ gen.ListPolicyVersionsRequestObject) (gen.ListPolicyVersionsResponseObject, error) {
	return nil, notImplemented("listPolicyVersions")
}

// CreatePolicyVersion is not implemented yet.
func (s *Server) CreatePolicyVersion(_ context.Context, _ gen.CreatePolicyVersionRequestObject) (gen.CreatePolicyVersionResponseObject, error) {
	return nil, notImplemented("createPolicyVersion")
}
