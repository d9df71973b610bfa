package grpcapi

import (
	"context"
	"errors"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/jobs"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// CreateJob submits a job as POST /v1/jobs does: queued (pending) by
// default, run at once and waited for (up to the wait cap) with
// wait_for_completion. A precheck rejection of a waited-for job is CANCELED
// with the PrecheckFailure detail.
func (s *service) CreateJob(ctx context.Context, req *pb.CreateJobRequest) (*pb.CreateJobResponse, error) {
	r := jobs.Request{
		PolicyID: req.GetPolicyId(), Content: toDomainContent(req.GetContentData()), Threshold: req.GetThreshold(),
		Expedited: req.GetExpedited(), Options: req.GetOptions(), Wait: req.GetWaitForCompletion(),
	}
	if w := req.GetWebhook(); w != nil {
		r.Webhook = &domain.Webhook{URL: w.GetUrl(), ExtraHeaders: w.GetExtraHeaders()}
	}
	j, err := s.deps.Jobs.Submit(ctx, accountFrom(ctx), r)
	if err != nil {
		return nil, err
	}
	if j.ResultsStored {
		// The message is sent whole: its results are read for it.
		if j, err = s.deps.Jobs.Get(ctx, accountFrom(ctx), j.ID); err != nil {
			return nil, err
		}
	}
	resp := &pb.CreateJobResponse{Job: toPBJob(j)}
	if err := fitJob(resp, resp.Job); err != nil {
		return nil, err
	}
	return resp, nil
}

// GetJob returns one job of the account, with results when complete.
func (s *service) GetJob(ctx context.Context, req *pb.GetJobRequest) (*pb.GetJobResponse, error) {
	j, err := s.deps.Jobs.Get(ctx, accountFrom(ctx), req.GetJobUuid())
	if err != nil {
		return nil, err
	}
	resp := &pb.GetJobResponse{Job: toPBJob(j)}
	if err := fitJob(resp, resp.Job); err != nil {
		return nil, err
	}
	return resp, nil
}

// maxPageShrinks bounds how often ListJobs reads a smaller page to fit
// 4 MiB; each read is smaller than the last unless jobs change meanwhile.
const maxPageShrinks = 8

// ListJobs returns a page of the account's jobs, newest first. A page whose
// jobs (completed ones carry their results) would pass 4 MiB is read again
// with fewer jobs, so its next_page_token continues right after the last one
// sent.
func (s *service) ListJobs(ctx context.Context, req *pb.ListJobsRequest) (*pb.ListJobsResponse, error) {
	f, err := toDomainFilter(req.GetQuery())
	if err != nil {
		return nil, err
	}
	var pageSize *int32
	if n := req.GetPageSize(); n != 0 {
		pageSize = &n
	}
	account := accountFrom(ctx)
	for range maxPageShrinks {
		js, next, err := s.deps.Jobs.List(ctx, account, f, jobs.ViewFull, pageSize, req.GetPageToken())
		if err != nil {
			return nil, err
		}
		resp := &pb.ListJobsResponse{NextPageToken: next}
		size := proto.Size(resp)
		resp.Jobs = make([]*pb.Job, len(js))
		fits := len(js)
		for i, j := range js {
			resp.Jobs[i] = toPBJob(j)
			fitListedJob(resp.Jobs[i])
			size += sizeInList(resp.Jobs[i])
			if size > maxResponseBytes && fits == len(js) {
				fits = i
			}
		}
		if fits == len(js) {
			return resp, nil
		}
		n := int32(max(fits, 1))
		pageSize = &n
	}
	return nil, domain.Errorf(domain.Aborted, "the account's jobs changed while the page was read; retry")
}

// Evaluate streams the evaluation of each entry, as POST /v1/jobs/stream
// does, one message per entry in request order. A gRPC stream cannot report
// an entry's error and go on, so the first entry that fails ends the stream
// with its status (a precheck rejection: CANCELED with the PrecheckFailure
// detail) and the entries after it are not evaluated; the job is recorded
// canceled, as when the client goes away.
func (s *service) Evaluate(req *pb.EvaluateRequest, stream grpc.ServerStreamingServer[pb.EvaluateResponse]) error {
	ctx := stream.Context()
	st, err := s.deps.Jobs.StartStream(ctx, accountFrom(ctx), jobs.Request{
		PolicyID: req.GetPolicyId(), Content: toDomainContent(req.GetContentData()), Threshold: req.GetThreshold(),
		Expedited: req.GetExpedited(), Options: req.GetOptions(),
	})
	if err != nil {
		return err
	}
	withReport := req.IncludeEvaluationReport == nil || req.GetIncludeEvaluationReport()
	j := st.Job
	var entryErr *domain.Error
	err = st.Run(ctx, func(it jobs.StreamItem) error {
		if it.Err != nil {
			entryErr = it.Err
			return errEntryFailed
		}
		msg := &pb.EvaluateResponse{JobUuid: j.ID, ContentHash: it.Result.ContentHash, JobResultId: it.Result.ID}
		if withReport {
			msg.PolicyEvaluationReport = toPBReport(j, it.Result)
			fitMessage(msg, msg.PolicyEvaluationReport)
		}
		return sendWithin(stream, msg, s.sendWindow)
	})
	if entryErr != nil {
		return entryErr
	}
	return err
}

var errEntryFailed = errors.New("an entry failed; the stream ends with its status")

// defaultStreamSendWindow is how long one message may wait for a client
// that does not read (REST's stream write timeout), unless configured: such
// a client would otherwise hold its job running for as long as it keeps the
// connection. The next entry is evaluated only once a message is sent, so
// the wait also stops the stream's evaluation.
const defaultStreamSendWindow = 2 * time.Minute

// sendWithin sends msg, giving up after window. A send that gives up is
// left to end with the stream: returning from the method closes the stream,
// which wakes it.
func sendWithin(stream grpc.ServerStreamingServer[pb.EvaluateResponse], msg *pb.EvaluateResponse, window time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- stream.Send(msg) }()
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return domain.Errorf(domain.DeadlineExceeded, "the client did not read the stream for %s", window)
	}
}
