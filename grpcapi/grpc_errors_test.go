package grpcapi

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestToStatus is the funnel's table: every domain code becomes the gRPC
// code of the same number (docs/api.md#error-bodies lists them by their gRPC names), with
// its message; what is not a domain error never shows its text.
func TestToStatus(t *testing.T) {
	for _, tc := range []struct {
		err   error
		code  codes.Code
		msg   string
		known bool
	}{
		{domain.Errorf(domain.Canceled, "m"), codes.Canceled, "m", true},
		{domain.Errorf(domain.InvalidArgument, "m"), codes.InvalidArgument, "m", true},
		{domain.Errorf(domain.DeadlineExceeded, "m"), codes.DeadlineExceeded, "m", true},
		{domain.Errorf(domain.NotFound, "m"), codes.NotFound, "m", true},
		{domain.Errorf(domain.AlreadyExists, "m"), codes.AlreadyExists, "m", true},
		{domain.Errorf(domain.PermissionDenied, "m"), codes.PermissionDenied, "m", true},
		{domain.Errorf(domain.ResourceExhausted, "m"), codes.ResourceExhausted, "m", true},
		{domain.Errorf(domain.FailedPrecondition, "m"), codes.FailedPrecondition, "m", true},
		{domain.Errorf(domain.Aborted, "m"), codes.Aborted, "m", true},
		{domain.Errorf(domain.OutOfRange, "m"), codes.OutOfRange, "m", true},
		{domain.Errorf(domain.Unimplemented, "m"), codes.Unimplemented, "m", true},
		{domain.Errorf(domain.Internal, "m"), codes.Internal, "m", true},
		{domain.Errorf(domain.Unavailable, "disk full"), codes.Unavailable, "disk full", true},
		{domain.Errorf(domain.Unauthenticated, "m"), codes.Unauthenticated, "m", true},
		{fmt.Errorf("wrapped: %w", domain.Errorf(domain.NotFound, "m")), codes.NotFound, "m", true},
		{context.Canceled, codes.Canceled, "request canceled", true},
		{fmt.Errorf("store: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "deadline exceeded", true},
		{status.Error(codes.Unavailable, "transport closing"), codes.Unavailable, "transport closing", true},
		{errors.New("pq: relation jobs does not exist at /srv/x.go:12"), codes.Internal, "internal error", false},
		{status.Error(codes.Internal, "grpc: error while marshaling"), codes.Internal, "internal error", false},
	} {
		st, known := toStatus(tc.err)
		require.Equal(t, tc.code, st.Code(), "%v", tc.err)
		require.Equal(t, tc.msg, st.Message(), "%v", tc.err)
		require.Equal(t, tc.known, known, "%v", tc.err)
	}
}

func TestStatusDetails(t *testing.T) {
	st, _ := toStatus(domain.InvalidField("contentData[0].text", "is too long"))
	require.Len(t, st.Details(), 1)
	br := st.Details()[0].(*errdetails.BadRequest)
	require.Equal(t, "contentData[0].text", br.FieldViolations[0].Field)
	require.Equal(t, "is too long", br.FieldViolations[0].Description)

	st, _ = toStatus(&domain.Error{Code: domain.Canceled, Message: "blocked", Details: []domain.Detail{domain.PrecheckFailure{
		Type: domain.PrecheckFailureNCMEC, Message: "matched", ContentHash: "sha256::ab", MatchConfidence: domain.MatchConfidenceHigh,
	}}})
	require.Equal(t, codes.Canceled, st.Code())
	pf := st.Details()[0].(*pb.PrecheckFailure)
	require.Equal(t, pb.PrecheckFailureType_PRECHECK_FAILURE_TYPE_NCMEC, pf.Type)
	require.Equal(t, "matched", pf.Message)
	require.Equal(t, "sha256::ab", pf.Details.GetStringValue())
	require.Equal(t, pb.PrecheckMatchConfidence_PRECHECK_MATCH_CONFIDENCE_HIGH, pf.MatchConfidence)

	// The rate limit says when to come back.
	st = rateLimitStatus(context.Background(), rateLimited{err: domain.Errorf(domain.ResourceExhausted, "slow down"), wait: 2 * time.Second})
	require.Equal(t, codes.ResourceExhausted, st.Code())
	require.Equal(t, int64(2), st.Details()[0].(*errdetails.RetryInfo).RetryDelay.Seconds)
}
