package persistence_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/contenteval/contenteval/precheck"
	"github.com/stretchr/testify/require"
)

func counterIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id-%04d", n) }
}

// flipBits returns hex h with its first n bits inverted.
func flipBits(t *testing.T, h string, n int) string {
	t.Helper()
	b, err := hex.DecodeString(h)
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		b[i/8] ^= 1 << (i % 8)
	}
	return hex.EncodeToString(b)
}

func TestPrecheckWithHashLists(t *testing.T) {
	bridge, err := os.ReadFile("../domain/imaging/testdata/pdq/bridge-mods/aaa-orig.jpg")
	require.NoError(t, err)
	const bridgePDQ = "f8f8f0cee0f4a84f06370a22028f67f0b36e2ed596621e1d33e6b39c4e9c9b22"
	other, err := os.ReadFile("../domain/imaging/testdata/pdq/labelme/q0122.jpg")
	require.NoError(t, err)
	sum := md5.Sum(other)

	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		store := persistence.NewHashLists(db)
		svc, err := precheck.NewService(store, precheck.Config{}, &fixedClock{t: t0}, counterIDs(), nil)
		require.NoError(t, err)

		// Nothing loaded: nothing blocked.
		require.NoError(t, svc.Reload(ctx))
		img, err := svc.Check(ctx, "acct", "job", bridge)
		require.NoError(t, err)
		require.Equal(t, imaging.Format("jpeg"), img.Format)

		_, err = svc.Import(ctx, "exact", imaging.KindMD5, strings.NewReader("# known\n"+hex.EncodeToString(sum[:])+"\n"))
		require.NoError(t, err)
		for _, tc := range []struct {
			list string
			bits int
			want domain.PrecheckMatchConfidence
		}{{"p-high", 6, domain.MatchConfidenceHigh}, {"p-med", 15, domain.MatchConfidenceMedium}, {"p-low", 28, domain.MatchConfidenceLow}, {"p-none", 40, ""}} {
			l, err := svc.Import(ctx, "pdq", imaging.KindPDQ, strings.NewReader(flipBits(t, bridgePDQ, tc.bits)+" 100\n"))
			require.NoError(t, err, tc.list)
			require.EqualValues(t, 1, l.Count)
			require.NoError(t, svc.Reload(ctx))
			_, err = svc.Check(ctx, "acct", "job-"+tc.list, bridge)
			if tc.want == "" {
				require.NoError(t, err, "%d bits apart is not a match", tc.bits)
				continue
			}
			var blocked *precheck.Blocked
			require.True(t, errors.As(err, &blocked), "%s: %v", tc.list, err)
			require.Equal(t, tc.want, blocked.Failure.MatchConfidence, tc.list)
			require.Equal(t, domain.PrecheckFailureNCMEC, blocked.Failure.Type)
			require.Equal(t, "JOB_ERROR_REASON_CONTENT_BLOCKED", blocked.Reason())
			require.Equal(t, imaging.ContentHash(bridge), blocked.Failure.ContentHash)
		}

		// Exact md5 match.
		_, err = svc.Check(ctx, "acct", "job-exact", other)
		var blocked *precheck.Blocked
		require.True(t, errors.As(err, &blocked))
		require.Equal(t, domain.MatchConfidenceExact, blocked.Failure.MatchConfidence)

		// The audit trail names list and confidence, newest first, and no bytes.
		ms, err := store.ListMatches(ctx, "acct", 10)
		require.NoError(t, err)
		require.Len(t, ms, 4)
		require.Equal(t, "exact", ms[0].List)
		require.Equal(t, "job-exact", ms[0].JobID)
		require.Equal(t, domain.MatchConfidenceExact, ms[0].Confidence)

		lists, err := svc.List(ctx)
		require.NoError(t, err)
		require.Len(t, lists, 2)

		// Deleting a list unblocks after the reload; an unknown list is NOT_FOUND.
		require.NoError(t, svc.Delete(ctx, "exact"))
		requireCode(t, svc.Delete(ctx, "exact"), domain.NotFound)
		require.NoError(t, svc.Reload(ctx))
		_, err = svc.Check(ctx, "acct", "job", other)
		require.NoError(t, err)

		// Unreadable images are refused with their failure type.
		_, err = svc.Check(ctx, "acct", "job", []byte("\x89PNG\r\n\x1a\nnot really"))
		require.True(t, errors.As(err, &blocked))
		require.Equal(t, domain.PrecheckFailureInvalidImage, blocked.Failure.Type)
		require.Equal(t, "JOB_ERROR_REASON_CONTENT_PRECHECK_FAILED", blocked.Reason())
		_, err = svc.Check(ctx, "acct", "job", []byte("<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>"))
		require.True(t, errors.As(err, &blocked))
		require.Equal(t, domain.PrecheckFailureUnsupportedImageFormat, blocked.Failure.Type)

		// A bad file names its line; nothing of it is imported.
		_, err = svc.Import(ctx, "bad", imaging.KindSHA1, strings.NewReader("0123456789012345678901234567890123456789\nzz\n"))
		requireCode(t, err, domain.InvalidArgument)
		require.Contains(t, domain.ErrorMessage(err), "line 2")
		lists, _ = svc.List(ctx)
		require.Len(t, lists, 1)
	})
}
