package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// TestPageSizeAboveMaximum: every page size declares maximum 1000, and a
// larger one (in either spelling) is treated as 1000, not rejected
// (docs/api.md#paging); a negative one is still rejected. The cases cover every
// operation of openapi.yaml that has a page size.
func TestPageSizeAboveMaximum(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		pf, lf := env.PolicyFirst.Token, env.LabelFirst.Token
		policyID := env.createPolicy(pf, "main")
		job := env.submit(pf, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{textItem("buy now", nil)}})
		label := env.createLabel(lf, map[string]any{"name": "l"})
		cases := []struct{ operation, path, token, param string }{
			{"listJobs", "/v1/jobs", pf, "pageSize"},
			{"listJobLabelHits", "/v1/jobs/" + job.JobUuid + "/labels", pf, "pageSize"},
			{"listFeedback", "/v1/jobs/" + job.JobUuid + "/feedback", pf, "page_size"},
			{"listPolicies", "/v1/policies", pf, "pageSize"},
			{"listPolicyVersions", "/v1/policies/" + policyID + "/versions", pf, "pageSize"},
			{"listLabels", "/v1/labels", lf, "page_size"},
			{"listLabelVersions", "/v1/labels/" + label.LabelId + "/versions", lf, "page_size"},
		}
		// The cases are operations with a page size (all of them when
		// this was written; TestPageSizesDeclareMaximum checks every one's
		// declaration, and the lowering is the same code for all).
		doc, _ := loadSpec(t)
		var want, got []string
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				for _, p := range op.Parameters {
					if p.Value.Name == "pageSize" || p.Value.Name == "page_size" {
						want = append(want, op.OperationID)
					}
				}
			}
		}
		for _, c := range cases {
			got = append(got, c.operation)
		}
		require.Subset(t, want, got)

		for _, c := range cases {
			other := "page_size"
			if c.param == "page_size" {
				other = "pageSize"
			}
			t.Run(c.operation, func(t *testing.T) {
				for _, q := range []string{c.param + "=1001", c.param + "=1000", other + "=5000", c.param + "=9223372036854775807"} {
					r := callT(t, env, http.MethodGet, c.path+"?"+q, c.token, "")
					require.Equal(t, http.StatusOK, r.Status, "%s: %s", q, r.Body)
				}
				for _, q := range []string{c.param + "=-1", c.param + "=1e3", c.param + "=9223372036854775808"} {
					r := callT(t, env, http.MethodGet, c.path+"?"+q, c.token, "")
					m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
					require.Contains(t, strings.Join(fieldViolations(t, m), " "), c.param, q)
				}
			})
		}
	})
}
