package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// rulePos is an error expected of a rules check: where, and a part of its
// message.
type rulePos struct {
	line, column int32
	message      string // a part of it
}

// requireRuleErrors checks that got reports exactly the errors want, and
// no figures.
func requireRuleErrors(t *testing.T, got client.CheckRulesResponse, want []rulePos) {
	t.Helper()
	require.Len(t, got.Errors, len(want), "%+v", got.Errors)
	for i, w := range want {
		e := got.Errors[i]
		require.Equal(t, w.line, e.Line, "error %d: %+v", i, e)
		require.Equal(t, w.column, e.Column, "error %d: %+v", i, e)
		require.Contains(t, e.Message, w.message, "error %d", i)
	}
	require.Nil(t, got.SignalCount, "no figures for a text that does not compile")
	require.Nil(t, got.ComplexityScore)
	require.Nil(t, got.TokenCountsV2)
}

// TestCheckRules: POST /v1/rules/check lists every compile error with its line
// and column (in code points), for both kinds of text and both account types,
// and for a text that compiles, the figures publishing it gives the version.
func TestCheckRules(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		check := func(t *testing.T, token string, kind client.RulesKind, text string) client.CheckRulesResponse {
			t.Helper()
			r, err := env.Client(token).CheckRulesWithResponse(ctx, client.CheckRulesRequest{Kind: kind, Text: text})
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
			specChecked(t, r.HTTPResponse, r.Body)
			return *r.JSON200
		}
		label := "=(\"kill\")\n" +
			"  REGEX(\"[\")\n" +
			"\"😀🔪\" [NEAAR] \"b\"\n" + // columns count code points: the operator is at 6
			"SENTIMENT(\"meh\")\n"
		policy := "LABEL \"A\" {\n" +
			"    REGEX(\"(\")\n" +
			"\tSENTIMENT(\"meh\")\n" +
			"}\n" +
			"LABEL \"é😀\" { \"x\" [FOOBAR] \"y\" }\n"
		for _, tok := range []string{env.LabelFirst.Token, env.PolicyFirst.Token} {
			requireRuleErrors(t, check(t, tok, client.RULESKINDLABEL, label), []rulePos{
				{2, 3, "invalid REGEX"}, {3, 6, "unknown context operator [NEAAR]; did you mean [NEAR]?"}, {4, 1, "SENTIMENT takes"},
			})
			requireRuleErrors(t, check(t, tok, client.RULESKINDPOLICY, policy), []rulePos{
				{2, 5, "invalid REGEX"}, {3, 2, "SENTIMENT takes"}, {5, 18, "unknown context operator [FOOBAR]"},
			})
			// The kind decides how a text compiles: rules outside a block are a
			// label version, not a policy.
			require.Equal(t, []client.RuleCheckError{}, check(t, tok, client.RULESKINDLABEL, `=("kill")`).Errors)
			requireRuleErrors(t, check(t, tok, client.RULESKINDPOLICY, `=("kill")`), []rulePos{{1, 1, "rules belong inside a LABEL or SECTION block"}})
		}

		// Every error is listed, up to 100 and one saying there were more.
		var bad strings.Builder
		for i := range 150 {
			fmt.Fprintf(&bad, "REGEX(\"(%d\")\n", i)
		}
		many := check(t, env.LabelFirst.Token, client.RULESKINDLABEL, bad.String())
		require.Len(t, many.Errors, 101)
		for i, e := range many.Errors[:100] {
			require.Equal(t, client.RuleCheckError{Line: int32(i + 1), Column: 1, Message: fmt.Sprintf("invalid REGEX: missing closing ): `(%d`", i)}, e)
		}
		require.Contains(t, many.Errors[100].Message, "too many errors")

		// A text that compiles has the figures of a published version.
		text := "LABEL \"Threat\" {\n    ANY(=(\"kill\"), ~(\"idiot\")) AND NOT \"news\"\n    REGEX(\"[0-9]+\")\n}\n"
		got := check(t, env.PolicyFirst.Token, client.RULESKINDPOLICY, text)
		require.Equal(t, []client.RuleCheckError{}, got.Errors)
		pr, err := env.Client(env.PolicyFirst.Token).CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "checked", Text: text})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
		pv := pr.JSON200.PolicyVersion
		require.Equal(t, int32(4), *got.SignalCount)
		require.Equal(t, pv.ComplexityScore, *got.ComplexityScore)
		require.Equal(t, pv.TokenCountsV2, *got.TokenCountsV2)

		lc := env.Client(env.LabelFirst.Token)
		lr, err := lc.CreateLabelWithResponse(ctx, client.CreateLabelRequest{Name: "Threat"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, lr.StatusCode(), "%s", lr.Body)
		labelText := "ANY(=(\"kill\"), ~(\"idiot\"))\nSENTIMENT(\"negative\") AND \"insult\"\n"
		got = check(t, env.LabelFirst.Token, client.RULESKINDLABEL, labelText)
		vr, err := lc.CreateLabelVersionWithResponse(ctx, lr.JSON200.Label.LabelId, client.CreateLabelVersionRequest{Text: labelText})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, vr.StatusCode(), "%s", vr.Body)
		lv := vr.JSON200.LabelVersion
		require.Equal(t, []client.RuleCheckError{}, got.Errors)
		require.Equal(t, float32(*got.SignalCount), lv.SignalCount)
		require.Equal(t, lv.ComplexityScore, *got.ComplexityScore)
		require.Equal(t, lv.TokenCountsV2, *got.TokenCountsV2)
		// Nothing was stored by the checks: the account has the one label.
		labels := env.listLabels(env.LabelFirst.Token, "")
		require.Len(t, labels.Labels, 1)

		// Bounded as publishing is: text over 64 KiB is refused before it is
		// compiled, naming the field; a missing or unknown kind and empty text
		// are refused by the contract.
		big := `=("` + strings.Repeat("a", 64<<10) + `")`
		for _, kind := range []string{"RULES_KIND_LABEL", "RULES_KIND_POLICY"} {
			r := env.call(http.MethodPost, "/v1/rules/check", env.LabelFirst.Token, mustJSON(t, map[string]any{"kind": kind, "text": big}))
			m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
			require.Equal(t, []string{"text"}, fieldViolations(t, m))
		}
		for _, body := range []string{`{"text":"=(\"x\")"}`, `{"text":"=(\"x\")","kind":"RULES_KIND_OTHER"}`, `{"text":"","kind":"RULES_KIND_LABEL"}`} {
			r := env.call(http.MethodPost, "/v1/rules/check", env.PolicyFirst.Token, body)
			requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		}
		requireStatus(t, env.call(http.MethodPost, "/v1/rules/check", "", `{"text":"x","kind":"RULES_KIND_LABEL"}`), http.StatusUnauthorized, domain.Unauthenticated)
	})
}
