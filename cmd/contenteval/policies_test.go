package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

func TestPolicies(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.Client(env.PolicyFirst.Token)

		r, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "main", Text: testPolicyText})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		specChecked(t, r.HTTPResponse, r.Body)
		p, v := r.JSON200.Policy, r.JSON200.PolicyVersion
		require.Equal(t, "main", p.PolicyKey)
		require.Equal(t, v.PolicyVersionId, p.ActiveVersionId)
		require.False(t, p.Disabled)
		require.EqualValues(t, 1, v.SequentialVersion)
		require.Equal(t, testPolicyText, v.Text)
		require.Positive(t, v.TokenCountsV2.DslTokenCount)
		require.Positive(t, v.ComplexityScore)

		// Duplicate key, compile errors, bad key.
		raw := env.call(http.MethodPost, "/v1/policies", env.PolicyFirst.Token, `{"policyKey":"main","text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusConflict, domain.AlreadyExists)
		raw = env.call(http.MethodPost, "/v1/policies", env.PolicyFirst.Token, `{"policyKey":"bad","text":"LABEL \"A\" {\n  =(\"a\"\n}\nFOO"}`)
		m := requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		details := m["details"].([]any)
		require.Equal(t, "type.googleapis.com/contenteval.CompilationErrors", details[0].(map[string]any)["@type"])
		errs := details[0].(map[string]any)["errors"].([]any)
		require.NotEmpty(t, errs)
		require.Positive(t, errs[0].(map[string]any)["line"])
		raw = env.call(http.MethodPost, "/v1/policies", env.PolicyFirst.Token, `{"policyKey":"-x","text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		raw = env.call(http.MethodPost, "/v1/policies", env.LabelFirst.Token, `{"policyKey":"x","text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusBadRequest, domain.FailedPrecondition)

		// Get; another account's policy is NOT_FOUND.
		g, err := c.GetPolicyWithResponse(ctx, p.PolicyId)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, g.StatusCode())
		require.Equal(t, p.PolicyId, g.JSON200.Policy.PolicyId)
		other := env.newAccount("other", domain.AccountPolicyFirst)
		raw = env.call(http.MethodGet, "/v1/policies/"+p.PolicyId, other.Token, "")
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)
		raw = env.call(http.MethodGet, "/v1/policies/nope", env.PolicyFirst.Token, "")
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)

		// A new version becomes active.
		nv, err := c.CreatePolicyVersionWithResponse(ctx, p.PolicyId, client.CreatePolicyVersionRequest{Text: `LABEL "Only" { =("x") }`})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, nv.StatusCode(), "%s", nv.Body)
		specChecked(t, nv.HTTPResponse, nv.Body)
		require.EqualValues(t, 2, nv.JSON200.PolicyVersion.SequentialVersion)
		g, err = c.GetPolicyWithResponse(ctx, p.PolicyId)
		require.NoError(t, err)
		require.Equal(t, nv.JSON200.PolicyVersion.PolicyVersionId, g.JSON200.Policy.ActiveVersionId)
		raw = env.call(http.MethodPost, "/v1/policies/"+p.PolicyId+"/versions", env.PolicyFirst.Token, `{"text":"LABEL {"}`)
		requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
		raw = env.call(http.MethodPost, "/v1/policies/"+p.PolicyId+"/versions", other.Token, `{"text":"LABEL \"A\" { =(\"a\") }"}`)
		requireStatus(t, raw, http.StatusNotFound, domain.NotFound)

		// Versions, oldest first, paged.
		lv, err := c.ListPolicyVersionsWithResponse(ctx, p.PolicyId, &client.ListPolicyVersionsParams{PageSize: ptr(int32(1))})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, lv.StatusCode(), "%s", lv.Body)
		specChecked(t, lv.HTTPResponse, lv.Body)
		require.Len(t, lv.JSON200.PolicyVersions, 1)
		require.EqualValues(t, 1, lv.JSON200.PolicyVersions[0].SequentialVersion)
		require.NotNil(t, lv.JSON200.NextPageToken)
		lv, err = c.ListPolicyVersionsWithResponse(ctx, p.PolicyId, &client.ListPolicyVersionsParams{PageSize: ptr(int32(1)), PageToken: lv.JSON200.NextPageToken})
		require.NoError(t, err)
		require.EqualValues(t, 2, lv.JSON200.PolicyVersions[0].SequentialVersion)
		require.Nil(t, lv.JSON200.NextPageToken)

		// Policies, newest first, paged; tokens are bound to the account.
		env.Clock.Add(time.Second)
		second := env.createPolicy(env.PolicyFirst.Token, "second")
		lp, err := c.ListPoliciesWithResponse(ctx, &client.ListPoliciesParams{PageSize: ptr(int32(1))})
		require.NoError(t, err)
		specChecked(t, lp.HTTPResponse, lp.Body)
		require.Equal(t, second, lp.JSON200.Policies[0].PolicyId)
		tok := *lp.JSON200.NextPageToken
		lp, err = c.ListPoliciesWithResponse(ctx, &client.ListPoliciesParams{PageSize: ptr(int32(1)), PageToken: &tok})
		require.NoError(t, err)
		require.Equal(t, p.PolicyId, lp.JSON200.Policies[0].PolicyId)
		require.Nil(t, lp.JSON200.NextPageToken)
		raw = env.call(http.MethodGet, "/v1/policies?pageToken="+tok, other.Token, "")
		requireStatus(t, raw, http.StatusBadRequest, domain.InvalidArgument)
	})
}
