package main

import (
	"context"
	"crypto/ed25519"
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/access"
	pb "github.com/contenteval/contenteval/gen/clavatapb"
)

// roleKeys are keys of every role, and one issued before roles existed,
// for one account.
type roleKeys map[string]string

func (e *testEnv) roleKeys(t *testing.T, accountID string) roleKeys {
	t.Helper()
	ctx := context.Background()
	keys := roleKeys{}
	for _, r := range domain.KeyRoles {
		_, token, err := e.Main.Keys.IssueRole(ctx, accountID, "k-"+string(r), r, 0)
		require.NoError(t, err)
		keys[string(r)] = token
	}
	// A key as the server issued them before roles: a row with the
	// column's default and a token with registered claims only.
	k := &domain.APIKey{ID: domain.NewID(), AccountID: accountID, Created: e.Clock.Now()}
	require.NoError(t, persistenceKeys(e.Main).CreateKey(ctx, k))
	old, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.RegisteredClaims{
		Issuer: access.TokenIssuer, Subject: accountID, ID: k.ID,
	}).SignedString(signingKey(t, e.Main))
	require.NoError(t, err)
	keys["old"] = old
	return keys
}

// Every role against a representative set of endpoints, on both backends:
// admin (and a key without a role) may call everything, api evaluates and
// reads but does not change configuration, reviewer may call none of these (the
// review endpoints are covered by TestReviewQueuesEndToEnd)
// and is told 403 PERMISSION_DENIED, not 401; the same on gRPC.
func TestKeyRolesEnforced(t *testing.T) {
	t.Parallel()
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		pf, lf := env.roleKeys(t, env.PolicyFirst.ID), env.roleKeys(t, env.LabelFirst.ID)
		policyID := env.createPolicy(env.PolicyFirst.Token, "main")
		job := mustJSON(t, map[string]any{"policyId": policyID, "waitForCompletion": true,
			"contentData": []map[string]any{{"text": "hello"}}})
		const ok, denied = http.StatusOK, http.StatusForbidden
		for _, tc := range []struct {
			name, method, path string
			keys               roleKeys
			body               string
			want               map[string]int // role -> status
		}{
			{"create policy", http.MethodPost, "/v1/policies", pf, mustJSON(t, map[string]any{"policyKey": "p-%s", "text": testPolicyText}),
				map[string]int{"admin": ok, "old": ok, "api": denied, "reviewer": denied}},
			{"list policies", http.MethodGet, "/v1/policies", pf, "",
				map[string]int{"admin": ok, "old": ok, "api": ok, "reviewer": denied}},
			{"create job", http.MethodPost, "/v1/jobs", pf, job,
				map[string]int{"admin": ok, "old": ok, "api": ok, "reviewer": denied}},
			{"list jobs", http.MethodGet, "/v1/jobs", pf, "",
				map[string]int{"admin": ok, "old": ok, "api": ok, "reviewer": denied}},
			{"create label", http.MethodPost, "/v1/labels", lf, `{"name":"L-%s"}`,
				map[string]int{"admin": ok, "old": ok, "api": denied, "reviewer": denied}},
			{"list labels", http.MethodGet, "/v1/labels", lf, "",
				map[string]int{"admin": ok, "old": ok, "api": ok, "reviewer": denied}},
			{"check rules", http.MethodPost, "/v1/rules/check", lf, `{"kind":"RULES_KIND_LABEL","text":"=(\"x\")"}`,
				map[string]int{"admin": ok, "old": ok, "api": ok, "reviewer": denied}},
		} {
			for role, want := range tc.want {
				// Names unique per key, so a refused call would have succeeded.
				r := env.call(tc.method, tc.path, tc.keys[role], fmtRole(tc.body, role))
				if want == ok {
					require.Equal(t, ok, r.Status, "%s with a %s key: %s", tc.name, role, r.Body)
					continue
				}
				m := requireStatus(t, r, denied, domain.PermissionDenied)
				require.Contains(t, m["message"], role+" keys", tc.name)
			}
		}

		// Revocation still wins over the role: a revoked reviewer is not
		// told what it may not call.
		c, err := env.Main.Keys.AuthenticateCaller(t.Context(), pf["reviewer"])
		require.NoError(t, err)
		_, err = env.Main.Keys.Revoke(t.Context(), c.KeyID)
		require.NoError(t, err)
		requireStatus(t, env.call(http.MethodGet, "/v1/jobs", pf["reviewer"], ""), http.StatusUnauthorized, domain.Unauthenticated)

		gw := env.gateway()
		for role, want := range map[string]codes.Code{"admin": codes.OK, "old": codes.OK, "api": codes.OK, "reviewer": codes.PermissionDenied} {
			ctx := bearer(t.Context(), lf[role])
			_, err := gw.ListJobs(ctx, &pb.ListJobsRequest{})
			if want == codes.OK {
				require.NoError(t, err, role)
			} else {
				requireCode(t, err, want)
			}
		}
		_, err = gw.CreateJob(bearer(t.Context(), pf["admin"]), &pb.CreateJobRequest{PolicyId: policyID, WaitForCompletion: true,
			ContentData: []*pb.ContentData{textData("hello", nil)}})
		require.NoError(t, err)
		_, reviewer, err := env.Main.Keys.IssueRole(t.Context(), env.PolicyFirst.ID, "Ana", domain.RoleReviewer, 0)
		require.NoError(t, err)
		_, err = gw.CreateJob(bearer(t.Context(), reviewer), &pb.CreateJobRequest{PolicyId: policyID,
			ContentData: []*pb.ContentData{textData("hello", nil)}})
		requireCode(t, err, codes.PermissionDenied)
	})
}

// signingKey is the server's key file, to sign a token as an older server
// did.
func signingKey(t *testing.T, m *Main) ed25519.PrivateKey {
	t.Helper()
	k, err := loadOrCreateSigningKey(m.Config.JWTKeyFile)
	require.NoError(t, err)
	return k
}

func fmtRole(body, role string) string { return strings.ReplaceAll(body, "%s", role) }
