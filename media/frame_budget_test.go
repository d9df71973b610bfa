package media

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain/imaging"
)

// TestFrameFeaturesShareDecodeBudget checks that a video frame is decoded within
// the process's decode budget, as an image is: with the budget held by another
// image the frame waits until its context ends, and once room is back it is
// decoded, hashed and released.
func TestFrameFeaturesShareDecodeBudget(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 320, 240))))
	frame := buf.Bytes()
	one, err := imaging.Reservation(frame, imaging.Limits{})
	require.NoError(t, err)
	budget := imaging.NewBudget(one)
	_, _, release, err := budget.Decode(context.Background(), frame, imaging.Limits{})
	require.NoError(t, err)

	for _, tc := range []struct {
		name    string
		full    bool
		wantErr error
	}{
		{"budget held by another image", true, context.Canceled},
		{"room in the budget", false, nil},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		if tc.full {
			cancel() // the frame cannot get room, so it must not wait forever either
		} else {
			release()
		}
		feat, err := frameFeatures(ctx, budget, frame, imaging.Limits{})
		cancel()
		if tc.wantErr != nil {
			require.True(t, errors.Is(err, tc.wantErr), "%s: frameFeatures = %v, want %v", tc.name, err, tc.wantErr)
			continue
		}
		require.NoError(t, err, tc.name)
		require.NotZero(t, feat.MD5, tc.name)
		require.Zero(t, budget.Held(), "%s: the frame's pixels are still reserved after hashing", tc.name)
	}
}
