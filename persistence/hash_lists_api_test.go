package persistence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// TestHashListStore covers the accounts' lists on both backends: names per
// account, scoping, all-or-nothing adds, states, and the flood count of
// RecordHit (distinct contents within the hour).
func TestHashListStore(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		s := persistence.NewHashLists(db)
		gen0, err := s.HashListsGeneration(ctx)
		require.NoError(t, err)

		a := &domain.HashList{ID: "la", AccountID: "acct-a", Name: "n", Kind: domain.HashPDQ, Mode: domain.HashListEnforce, FloodLimit: 2, Created: t0,
			Bands: &domain.HashBands{Exact: 0, High: 5, Medium: 9, Low: 20}}
		require.NoError(t, s.CreateHashList(ctx, a, 2))
		b := &domain.HashList{ID: "lb", AccountID: "acct-b", Name: "n", Kind: domain.HashMD5, Mode: domain.HashListShadow, FloodLimit: 200, Created: t0}
		require.NoError(t, s.CreateHashList(ctx, b, 2), "names are per account")
		dup := &domain.HashList{ID: "lc", AccountID: "acct-a", Name: "n", Kind: domain.HashPDQ, Mode: domain.HashListEnforce, FloodLimit: 1, Created: t0}
		require.Equal(t, domain.AlreadyExists, domain.ErrorCode(s.CreateHashList(ctx, dup, 2)))
		dup.Name = "other"
		require.NoError(t, s.CreateHashList(ctx, dup, 2))
		dup.ID, dup.Name = "ld", "third"
		require.Equal(t, domain.ResourceExhausted, domain.ErrorCode(s.CreateHashList(ctx, dup, 2)))

		for _, tc := range []struct {
			account, id string
			found       bool
		}{
			{"acct-a", "la", true}, {"acct-b", "la", false}, {"acct-b", "lb", true}, {"", "la", false},
		} {
			l, err := s.GetHashList(ctx, tc.account, tc.id)
			if !tc.found {
				require.Equal(t, domain.NotFound, domain.ErrorCode(err), "%+v", tc)
				continue
			}
			require.NoError(t, err, "%+v", tc)
			require.Equal(t, tc.id, l.ID)
		}
		got, err := s.GetHashList(ctx, "acct-a", "la")
		require.NoError(t, err)
		require.Equal(t, a.Bands, got.Bands)
		got, err = s.GetHashList(ctx, "acct-b", "lb")
		require.NoError(t, err)
		require.Nil(t, got.Bands, "no bands: the server's")

		h1, h2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
		require.NoError(t, s.AddHashes(ctx, "la", []domain.HashListEntry{{Hex: h1, Source: "s1"}, {Hex: h2}, {Hex: h1, Source: "s1b", Note: "n"}}, 10))
		require.Equal(t, domain.ResourceExhausted, domain.ErrorCode(s.AddHashes(ctx, "la", []domain.HashListEntry{{Hex: strings.Repeat("3", 64)}}, 2)))
		es, err := s.ListHashes(ctx, "la", "", 10)
		require.NoError(t, err)
		require.Len(t, es, 2, "the refused add left nothing")
		require.Equal(t, "s1b", es[0].Source, "the last provenance given wins")
		require.Equal(t, domain.HashActive, es[0].State)
		page, err := s.ListHashes(ctx, "la", h1, 10)
		require.NoError(t, err)
		require.Len(t, page, 1)
		require.Equal(t, h2, page[0].Hex)

		checkFloodCount(t, s, h1)

		require.Equal(t, domain.NotFound, domain.ErrorCode(s.DeleteHashListByID(ctx, "acct-b", "la")))
		require.NoError(t, s.DeleteHashListByID(ctx, "acct-a", "la"))
		n := 0
		require.NoError(t, s.EachHashEntry(ctx, func(string, domain.HashKind, domain.HashListEntry) error { n++; return nil }))
		require.Zero(t, n, "the list's hashes went with it")
		gen1, err := s.HashListsGeneration(ctx)
		require.NoError(t, err)
		require.Greater(t, gen1, gen0)
	})
}

// checkFloodCount records hits of hash h1 of list "la" (flood limit 2)
// and checks when it is quarantined and when the count starts over.
func checkFloodCount(t *testing.T, s *persistence.HashLists, h1 string) {
	t.Helper()
	ctx := context.Background()
	// Flood limit 2: the third distinct content within the hour
	// quarantines; a content seen again is not new; an hour later the
	// count starts over.
	for i, tc := range []struct {
		content     string
		at          time.Duration
		quarantined bool
		state       domain.HashState
	}{
		{"c1", 0, false, domain.HashActive},
		{"c2", time.Minute, false, domain.HashActive},
		{"c1", 2 * time.Minute, false, domain.HashActive},
		{"c3", 3 * time.Minute, true, domain.HashQuarantined},
		{"c4", 4 * time.Minute, false, domain.HashQuarantined},
	} {
		out, err := s.RecordHit(ctx, domain.HashHit{ListID: "la", Hash: h1, ContentHash: tc.content, At: t0.Add(tc.at)}, 2)
		require.NoError(t, err)
		require.True(t, out.Found)
		require.Equal(t, tc.quarantined, out.Quarantined, "hit %d", i)
		require.Equal(t, tc.state, out.State, "hit %d", i)
		require.Equal(t, "s1b", out.Source)
	}
	e, err := s.GetHash(ctx, "la", h1)
	require.NoError(t, err)
	require.EqualValues(t, 5, e.MatchCount)
	e, err = s.SetHashState(ctx, "la", h1, domain.HashActive, true)
	require.NoError(t, err)
	require.Equal(t, domain.HashActive, e.State)
	for i, c := range []string{"c5", "c6"} {
		out, err := s.RecordHit(ctx, domain.HashHit{ListID: "la", Hash: h1, ContentHash: c, At: t0.Add(5 * time.Minute)}, 2)
		require.NoError(t, err)
		require.False(t, out.Quarantined, "confirming restarted the count (hit %d)", i)
	}
	out, err := s.RecordHit(ctx, domain.HashHit{ListID: "la", Hash: h1, ContentHash: "c7", At: t0.Add(2 * time.Hour)}, 2)
	require.NoError(t, err)
	require.False(t, out.Quarantined, "an hour later the earlier hits no longer count")
	out, err = s.RecordHit(ctx, domain.HashHit{ListID: "la", Hash: strings.Repeat("9", 64), ContentHash: "c", At: t0}, 2)
	require.NoError(t, err)
	require.False(t, out.Found)
}
