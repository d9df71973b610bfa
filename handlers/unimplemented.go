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

// ListLabelTags is not implemented yet.
func (s *Server) ListLabelTags(_ context.Context, _ gen.ListLabelTagsRequestObject) (gen.ListLabelTagsResponseObject, error) {
	return nil, notImplemented("listLabelTags")
}

// CreateLabelTag is not implemented yet.
func (s *Server) CreateLabelTag(_ context.Context, _ gen.CreateLabelTagRequestObject) (gen.CreateLabelTagResponseObject, error) {
	return nil, notImplemented("createLabelTag")
}

// ListLabels is not implemented yet.
func (s *Server) ListLabels(_ context.Context, _ gen.ListLabelsRequestObject) (gen.ListLabelsResponseObject, error) {
	return nil, notImplemented("listLabels")
}

// CreateLabel is not implemented yet.
func (s *Server) CreateLabel(_ context.Context, _ gen.CreateLabelRequestObject) (gen.CreateLabelResponseObject, error) {
	return nil, notImplemented("createLabel")
}

// EvaluateLabels is not implemented yet.
func (s *Server) EvaluateLabels(_ context.Context, _ gen.EvaluateLabelsRequestObject) (gen.EvaluateLabelsResponseObject, error) {
	return nil, notImplemented("evaluateLabels")
}

// DeleteLabel is not implemented yet.
func (s *Server) DeleteLabel(_ context.Context, _ gen.DeleteLabelRequestObject) (gen.DeleteLabelResponseObject, error) {
	return nil, notImplemented("deleteLabel")
}

// GetLabel is not implemented yet.
func (s *Server) GetLabel(_ context.Context, _ gen.GetLabelRequestObject) (gen.GetLabelResponseObject, error) {
	return nil, notImplemented("getLabel")
}

// UpdateLabel is not implemented yet.
func (s *Server) UpdateLabel(_ context.Context, _ gen.UpdateLabelRequestObject) (gen.UpdateLabelResponseObject, error) {
	return nil, notImplemented("updateLabel")
}

// ArchiveLabel is not implemented yet.
func (s *Server) ArchiveLabel(_ context.Context, _ gen.ArchiveLabelRequestObject) (gen.ArchiveLabelResponseObject, error) {
	return nil, notImplemented("archiveLabel")
}

// SetLabelTags is not implemented yet.
func (s *Server) SetLabelTags(_ context.Context, _ gen.SetLabelTagsRequestObject) (gen.SetLabelTagsResponseObject, error) {
	return nil, notImplemented("setLabelTags")
}

// UnarchiveLabel is not implemented yet.
func (s *Server) UnarchiveLabel(_ context.Context, _ gen.UnarchiveLabelRequestObject) (gen.UnarchiveLabelResponseObject, error) {
	return nil, notImplemented("unarchiveLabel")
}

// ListLabelVersions is not implemented yet.
func (s *Server) ListLabelVersions(_ context.Context, _ gen.ListLabelVersionsRequestObject) (gen.ListLabelVersionsResponseObject, error) {
	return nil, notImplemented("listLabelVersions")
}

// CreateLabelVersion is not implemented yet.
func (s *Server) CreateLabelVersion(_ context.Context, _ gen.CreateLabelVersionRequestObject) (gen.CreateLabelVersionResponseObject, error) {
	return nil, notImplemented("createLabelVersion")
}

// GetLabelVersion is not implemented yet.
func (s *Server) GetLabelVersion(_ context.Context, _ gen.GetLabelVersionRequestObject) (gen.GetLabelVersionResponseObject, error) {
	return nil, notImplemented("getLabelVersion")
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
