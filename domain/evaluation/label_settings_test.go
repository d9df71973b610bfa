package evaluation

import (
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

// Threshold precedence: request > call options > version options > 0.5,
// where 0 counts as unset; the call's global context and options override
// the version's one by one.
func TestLabelSettingsOf(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	b := func(v bool) *bool { return &v }
	s := func(v string) *string { return &v }
	ver := &domain.LabelVersion{ID: "v", GlobalContext: "version context",
		EvalOptions: domain.LabelEvalOptions{Threshold: f(0.9), BypassCache: b(true), Stack: s("a"), Expedited: b(true)}}
	bare := &domain.LabelVersion{ID: "w"}
	for _, tc := range []struct {
		name      string
		req       LabelOverrides
		v         *domain.LabelVersion
		threshold float64
		bypass    bool
		gc, stack string
		expedited bool
	}{
		{"version", LabelOverrides{}, ver, 0.9, true, "version context", "a", true},
		{"default", LabelOverrides{}, bare, 0.5, false, "", "", false},
		{"call over version", LabelOverrides{Options: &domain.LabelEvalOptions{Threshold: f(0.6), BypassCache: b(false), Stack: s("b")}}, ver, 0.6, false, "version context", "b", true},
		{"request over call", LabelOverrides{Threshold: f(0.3), Options: &domain.LabelEvalOptions{Threshold: f(0.6)}}, ver, 0.3, true, "version context", "a", true},
		{"zero is unset", LabelOverrides{Threshold: f(0), Options: &domain.LabelEvalOptions{Threshold: f(0)}}, ver, 0.9, true, "version context", "a", true},
		{"global context override", LabelOverrides{GlobalContext: "call context", Options: &domain.LabelEvalOptions{Expedited: b(false)}}, ver, 0.9, true, "call context", "a", false},
	} {
		st, bypass := LabelSettingsOf(tc.v, "L", tc.req)
		require.Equal(t, tc.threshold, st.Threshold, tc.name)
		require.Equal(t, tc.bypass, bypass, tc.name)
		require.Equal(t, tc.gc, st.GlobalContext, tc.name)
		require.Equal(t, tc.stack, st.Stack, tc.name)
		require.Equal(t, tc.expedited, st.Expedited, tc.name)
		require.Equal(t, "L", st.LabelName, tc.name)
	}
}
