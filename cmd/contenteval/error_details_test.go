package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// detailOf decodes one detail by its @type, as a client of the generated
// types does.
func detailOf(t *testing.T, d client.StatusDetail) any {
	t.Helper()
	v, err := d.ValueByDiscriminator()
	require.NoError(t, err)
	return v
}

// TestErrorDetailsTyped reads each kind of error detail through the
// generated client's types (StatusDetail, a oneOf on @type): a
// BadRequest, CompilationErrors, and a PrecheckFailure in a 499 body and in
// a stream's error line.
func TestErrorDetailsTyped(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.Client(env.PolicyFirst.Token)
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")

		bad, err := c.CreateJobWithResponse(ctx, client.CreateJobRequest{PolicyId: policyID, Threshold: ptr(2.0),
			ContentData: []client.ContentData{textItem("x", nil)}})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, bad.StatusCode())
		require.EqualValues(t, domain.InvalidArgument, bad.JSONDefault.Code)
		require.NotNil(t, bad.JSONDefault.Details)
		br, ok := detailOf(t, (*bad.JSONDefault.Details)[0]).(client.BadRequestDetail)
		require.True(t, ok, "%s", bad.Body)
		require.Equal(t, "threshold", br.FieldViolations[0].Field)
		require.NotEmpty(t, br.FieldViolations[0].Description)

		comp, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "bad", Text: "LABEL \"A\" {\n  =(\"a\"\n}\nFOO"})
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, comp.StatusCode())
		ce, ok := detailOf(t, (*comp.JSONDefault.Details)[0]).(client.CompilationErrorsDetail)
		require.True(t, ok, "%s", comp.Body)
		require.NotEmpty(t, ce.Errors)
		require.Positive(t, ce.Errors[0].Line)
		require.Positive(t, ce.Errors[0].Column)
		require.NotEmpty(t, ce.Errors[0].Message)

		notImage := []byte("not an image")
		pre, err := c.CreateJobWithResponse(ctx, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{Image: &notImage}}})
		require.NoError(t, err)
		require.Equal(t, 499, pre.StatusCode(), "%s", pre.Body)
		require.EqualValues(t, domain.Canceled, pre.JSON499.Code)
		pf := pre.JSON499.Details[0]
		require.Equal(t, client.PRECHECKFAILURETYPEINVALIDIMAGE, pf.Type)
		require.Equal(t, sha(string(notImage)), pf.Details.ContentHash)

		sresp, err := c.StreamJobs(ctx, client.StreamJobsRequest{PolicyId: policyID, ContentData: []client.ContentData{{Image: &notImage}}})
		require.NoError(t, err)
		defer sresp.Body.Close()
		sc := bufio.NewScanner(sresp.Body)
		require.True(t, sc.Scan())
		var line client.StreamJobsMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		require.Nil(t, line.Result)
		require.NotNil(t, line.Error)
		require.EqualValues(t, domain.Canceled, line.Error.Code)
		spf, ok := detailOf(t, (*line.Error.Details)[0]).(client.PrecheckFailureDetail)
		require.True(t, ok, "%s", sc.Bytes())
		require.Equal(t, "type.googleapis.com/contenteval.PrecheckFailure", spf.AtType)
		require.Equal(t, client.PRECHECKFAILURETYPEINVALIDIMAGE, spf.Type)
	})
}
