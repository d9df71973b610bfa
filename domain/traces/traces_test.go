package traces_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/contenteval/contenteval/domain/traces"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestStored(t *testing.T) {
	long := "big=" + strings.Repeat("v", 200)
	var many []string
	for i := range 32 {
		many = append(many, "k"+strings.Repeat("x", i%10)+string(rune('a'+i%26))+"="+strings.Repeat("v", 30))
	}
	for _, tc := range []struct {
		name                   string
		parent, state          string
		wantParent, wantState  string
		wantStatePrefixOfInput bool
	}{
		{name: "valid", parent: parent, state: "vendor=opaque,other=1", wantParent: parent, wantState: "vendor=opaque,other=1"},
		{name: "no state", parent: parent, wantParent: parent},
		{name: "none", parent: "", state: "vendor=opaque"},
		{name: "a later version is stored as 00", parent: "01" + parent[2:] + "-later", wantParent: parent},
		{name: "upper-case hex", parent: strings.ToUpper(parent)},
		{name: "zero trace id", parent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
		{name: "zero span id", parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
		{name: "short", parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902-01"},
		{name: "version ff", parent: "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{name: "not hex", parent: "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"},
		{name: "content", parent: "i will kill you", state: "a=b"},
		{name: "invalid state is dropped", parent: parent, state: "not a list", wantParent: parent},
		{name: "a member over 128 bytes goes first", parent: parent, state: "a=1," + long + "," + strings.Join(many[:12], ","),
			wantParent: parent, wantState: "a=1," + strings.Join(many[:12], ",")},
		{name: "then members from the end", parent: parent, state: strings.Join(many, ","), wantParent: parent, wantStatePrefixOfInput: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, s := traces.Stored(tc.parent, tc.state)
			require.Equal(t, tc.wantParent, p)
			require.LessOrEqual(t, len(s), traces.MaxStoredState)
			if tc.wantStatePrefixOfInput {
				require.NotEmpty(t, s)
				require.True(t, strings.HasPrefix(tc.state, s+","), "%q is not a list prefix of the input", s)
				return
			}
			require.Equal(t, tc.wantState, s)
		})
	}
}

// FuzzStored: whatever comes in, what may be stored is empty or a valid,
// bounded trace context that Stored gives back unchanged.
func FuzzStored(f *testing.F) {
	f.Add(parent, "vendor=opaque")
	f.Add("", "")
	f.Add(parent, strings.Repeat("k=v,", 40))
	f.Add("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "a=1")
	f.Fuzz(func(t *testing.T, parent, state string) {
		p, s := traces.Stored(parent, state)
		if p == "" {
			require.Empty(t, s)
			return
		}
		require.Len(t, p, 55)
		require.LessOrEqual(t, len(s), traces.MaxStoredState)
		p2, s2 := traces.Stored(p, s)
		require.Equal(t, [2]string{p, s}, [2]string{p2, s2})
		carrier := propagation.MapCarrier{"traceparent": p, "tracestate": s}
		require.True(t, trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier)).IsValid())
	})
}
