package jobs

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestLiveWork_BackgroundWaitsForAGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newLiveWork()
		ctx := context.Background()
		start := time.Now()
		w.wait(ctx, time.Minute)
		if d := time.Since(start); d != 0 {
			t.Fatalf("idle: waited %v", d)
		}

		// Two live evaluations: the wait ends when the last one does.
		w.begin()
		w.begin()
		done := make(chan time.Duration)
		go func() {
			s := time.Now()
			w.wait(ctx, time.Minute)
			done <- time.Since(s)
		}()
		time.Sleep(time.Second)
		w.end()
		synctest.Wait()
		select {
		case d := <-done:
			t.Fatalf("returned after %v with a live evaluation running", d)
		default:
		}
		time.Sleep(time.Second)
		w.end()
		if d := <-done; d != 2*time.Second {
			t.Fatalf("waited %v, want until the last evaluation ended (2s)", d)
		}

		// Under constant load the wait is bounded by its patience.
		w.begin()
		s := time.Now()
		w.wait(ctx, 50*time.Millisecond)
		if d := time.Since(s); d != 50*time.Millisecond {
			t.Fatalf("waited %v under constant load, want the patience (50ms)", d)
		}
		// And by ctx.
		cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		s = time.Now()
		w.wait(cctx, time.Minute)
		if d := time.Since(s); d != 10*time.Millisecond {
			t.Fatalf("waited %v past ctx", d)
		}
		w.end()
	})
}
