package grpcapi

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// rateLimited carries the wait of a RESOURCE_EXHAUSTED rate-limit refusal
// to the funnel, as retryAfterError does for REST's Retry-After.
type rateLimited struct {
	err  *domain.Error
	wait time.Duration
}

func (e rateLimited) Error() string { return e.err.Error() }
func (e rateLimited) Unwrap() error { return e.err }

// toStatus is the one error funnel of the service: every failure of an RPC,
// from authentication, input checks, the domain or a panic, becomes its
// status here. domain.Code values are the gRPC codes, so the table of
// docs/api.md#error-bodies is the identity. The second result is false for errors whose
// text must not reach the client (the caller logs them).
func toStatus(err error) (*status.Status, bool) {
	var de *domain.Error
	switch {
	case errors.As(err, &de):
		return domainStatus(de), true
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "request canceled"), true
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, "deadline exceeded"), true
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown && st.Code() != codes.Internal {
		// grpc-go's own refusals (a message over the receive limit) are
		// already statuses with client-safe text.
		return st, true
	}
	return status.New(codes.Internal, "internal error"), false
}

// domainStatus carries the details the SDKs and generic gRPC clients read:
// google.rpc.BadRequest for validation, the PrecheckFailure first for a
// precheck rejection (the Go SDK reads details[0]).
func domainStatus(e *domain.Error) *status.Status {
	st := status.New(codes.Code(e.Code), e.Message)
	var details []protoadapt.MessageV1
	for _, d := range e.Details {
		switch d := d.(type) {
		case domain.BadRequest:
			br := &errdetails.BadRequest{}
			for _, v := range d.FieldViolations {
				br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.Field, Description: v.Description})
			}
			details = append(details, br)
		case domain.PrecheckFailure:
			details = append(details, toPBPrecheckFailure(d))
		}
	}
	if len(details) > 0 && e.Code != domain.OK {
		if withDetails, err := st.WithDetails(details...); err == nil {
			return withDetails
		}
	}
	return st
}

func toPBPrecheckFailure(d domain.PrecheckFailure) *pb.PrecheckFailure {
	return &pb.PrecheckFailure{
		Type:            pb.PrecheckFailureType(pb.PrecheckFailureType_value[string(d.Type)]),
		Message:         d.Message,
		Details:         structpb.NewStringValue(d.ContentHash),
		MatchConfidence: pb.PrecheckMatchConfidence(pb.PrecheckMatchConfidence_value[string(d.MatchConfidence)]),
	}
}

// rateLimitStatus tells the client when to come back twice: RetryInfo for
// clients that read details, and grpc-retry-pushback-ms, which the retry
// policies of grpc-js (the JS SDK) and grpc-go honour instead of their
// backoff.
func rateLimitStatus(ctx context.Context, rl rateLimited) *status.Status {
	st := status.New(codes.ResourceExhausted, rl.err.Message)
	if withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(rl.wait)}); err == nil {
		st = withInfo
	}
	_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", strconv.FormatInt(rl.wait.Milliseconds(), 10)))
	return st
}
