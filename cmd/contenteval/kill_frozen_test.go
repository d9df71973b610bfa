package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFrozenOwners checks how the kill test tells the frozen process's
// jobs from the running one's: only once the running one has moved on.
func TestFrozenOwners(t *testing.T) {
	t.Parallel()
	set := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	type running = map[string]map[string]bool
	tests := []struct {
		name       string
		before     running
		now        running
		wantFrozen []string // sorted job IDs of the one frozen owner
		wantNone   bool     // no owner frozen
		wantDone   bool
	}{
		{name: "nothing changed yet", before: running{"p1": set("a"), "p2": set("b")}, now: running{"p1": set("a"), "p2": set("b")}},
		{name: "process two half way", before: running{"p1": set("a"), "p2": set("b", "c")}, now: running{"p1": set("a"), "p2": set("c", "d")}},
		{name: "process two moved on", before: running{"p1": set("a", "e"), "p2": set("b")}, now: running{"p1": set("a", "e"), "p2": set("d")}, wantFrozen: []string{"a", "e"}, wantDone: true},
		{name: "process two finished and took nothing", before: running{"p1": set("a"), "p2": set("b")}, now: running{"p1": set("a")}, wantFrozen: []string{"a"}, wantDone: true},
		{name: "process one held nothing", before: running{"p2": set("b")}, now: running{"p2": set("d")}, wantNone: true, wantDone: true},
		{name: "process one held nothing, two not moved", before: running{"p2": set("b")}, now: running{"p2": set("b")}},
		{name: "process two held nothing, then claims", before: running{"p1": set("a")}, now: running{"p1": set("a"), "p2": set("d")}, wantFrozen: []string{"a"}, wantDone: true},
		{name: "process two held nothing and still does", before: running{"p1": set("a")}, now: running{"p1": set("a")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			frozen, done := frozenOwners(tc.before, tc.now)
			require.Equal(t, tc.wantDone, done)
			if !tc.wantDone {
				return
			}
			if tc.wantNone {
				require.Empty(t, frozen)
				return
			}
			require.Len(t, frozen, 1)
			got := slices.Clone(frozen[0])
			slices.Sort(got)
			require.Equal(t, tc.wantFrozen, got)
		})
	}
}
