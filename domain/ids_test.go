package domain_test

import (
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// An id made for a time is a UUIDv7 of that millisecond, whatever the
// wall clock says; ids of one millisecond are unique and increase.
func TestNewIDAt(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.Date(2020, 2, 29, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, 0),
	} {
		var ids []string
		for range 1000 {
			id := domain.NewIDAt(at)
			u, err := uuid.Parse(id)
			require.NoError(t, err)
			require.Equal(t, uuid.Version(7), u.Version())
			require.Equal(t, uuid.RFC4122, u.Variant())
			got, ok := domain.IDTime(id)
			require.True(t, ok)
			require.Equal(t, at.Truncate(time.Millisecond).UTC(), got)
			ids = append(ids, id)
		}
		require.True(t, sort.StringsAreSorted(ids), "ids of one millisecond increase")
		seen := map[string]bool{}
		for _, id := range ids {
			require.False(t, seen[id], "duplicate %s", id)
			seen[id] = true
		}
	}
}

func TestIDTime_OtherForms(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "j1", uuid.NewString(), "msg_" + domain.NewID(), "0194d3e0-0000-7000-8000-00000000000"} {
		_, ok := domain.IDTime(id)
		require.False(t, ok, id)
	}
	got, ok := domain.IDTime(domain.NewID())
	require.True(t, ok)
	require.WithinDuration(t, time.Now(), got, time.Minute)
}

func FuzzIDTime(f *testing.F) {
	f.Add(domain.NewID())
	f.Add("j1")
	f.Fuzz(func(t *testing.T, id string) {
		if at, ok := domain.IDTime(id); ok {
			require.Equal(t, at, at.Truncate(time.Millisecond))
		}
	})
}
