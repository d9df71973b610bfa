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

