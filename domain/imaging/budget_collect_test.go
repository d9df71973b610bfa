package imaging

import (
	"context"
	"image"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"weak"
)

// firstPixel points into an image's pixel buffer, for a weak pointer to it.
func firstPixel(t *testing.T, img image.Image) *uint8 {
	t.Helper()
	switch m := img.(type) {
	case *image.NRGBA:
		return &m.Pix[0]
	case *image.RGBA:
		return &m.Pix[0]
	}
	t.Fatalf("unexpected image type %T", img)
	return nil
}

// TestBudgetFreesReleasedPixelsBeforeGranting checks that a budget with room for one
// image lets the next decode in only once the released image's pixels are freed, with
// the collector otherwise off: a released image is garbage that takes memory until a
// collection, and the collector paced by GOGC may not run for several budgets' worth.
// Not parallel: it turns the collector off for the process.
func TestBudgetFreesReleasedPixelsBeforeGranting(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	data := encode(t, FormatPNG, testImage(256, 128))
	one, err := Reservation(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBudget(one)
	ctx := context.Background()
	img, _, release, err := b.Decode(ctx, data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	pixels := weak.Make(firstPixel(t, img))
	img = nil
	_ = img // dropped before release, as Decode's contract asks
	release()
	if pixels.Value() == nil {
		t.Fatal("the pixels were freed with the collector off: the test cannot tell anything")
	}
	img, _, release, err = b.Decode(ctx, data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if pixels.Value() != nil {
		t.Fatal("the next decode got the budget while the released image's pixels were still in memory")
	}
	runtime.KeepAlive(img)
}

// TestBudgetCollectsOnlyForAWaiter counts the collections the budget runs: none while
// what is released and what is asked for fit together, one when a decode would
// otherwise wait on released bytes, and none while nothing is released.
func TestBudgetCollectsOnlyForAWaiter(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(64, 32))
	one, err := Reservation(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		images      int64 // the budget, in images
		held        int   // images decoded and kept
		released    int   // images decoded and released
		collections int64 // run to let one more image in
	}{
		{"room for the next beside the released", 3, 1, 1, 0},
		{"released bytes in the way", 2, 1, 1, 1},
		{"everything released", 2, 0, 2, 1},
		{"nothing held or released", 1, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudget(tc.images * one)
			var runs atomic.Int64
			b.collect = func() { runs.Add(1) }
			ctx := context.Background()
			var keep []func()
			for i := range tc.held + tc.released {
				_, _, release, err := b.Decode(ctx, data, Limits{})
				if err != nil {
					t.Fatal(err)
				}
				if i < tc.held {
					keep = append(keep, release)
				} else {
					release()
				}
			}
			_, _, release, err := b.Decode(ctx, data, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			release()
			for _, r := range keep {
				r()
			}
			if got := runs.Load(); got != tc.collections {
				t.Errorf("%d collections, want %d", got, tc.collections)
			}
		})
	}
}

// TestBudgetWaiterGetsReleaseOfHeldImage: a decode that waits on an image still in
// use gets in once that image is released (and collected), not at its deadline.
func TestBudgetWaiterGetsReleaseOfHeldImage(t *testing.T) {
	t.Parallel()
	data := encode(t, FormatPNG, testImage(64, 32))
	one, err := Reservation(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewBudget(one)
	_, _, release, err := b.Decode(context.Background(), data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() {
		_, _, r, err := b.Decode(context.Background(), data, Limits{})
		if err == nil {
			r()
		}
		got <- err
	}()
	for !b.waiting() {
		runtime.Gosched()
	}
	release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func (b *Budget) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.Len() > 0
}

// TestHashBytesCoversPDQ checks the working memory reserved for hashing against what
// PDQ allocates, on a square image and on the extreme shapes where it is largest.
// Not parallel, so that the allocation count is PDQ's alone.
func TestHashBytesCoversPDQ(t *testing.T) {
	for _, size := range []struct{ w, h int }{{1000, 1000}, {20000, 5}, {5, 20000}, {3000, 200}} {
		img := image.NewGray(image.Rect(0, 0, size.w, size.h))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		PDQ(img)
		runtime.ReadMemStats(&after)
		if got, reserved := int64(after.TotalAlloc-before.TotalAlloc), hashBytes(size.w, size.h); got > reserved {
			t.Errorf("%dx%d: PDQ allocated %d bytes, %d reserved", size.w, size.h, got, reserved)
		}
	}
}
