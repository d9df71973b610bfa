package modelbackend

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestFairSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		f := newFairSlots(2)
		// Alone, an account takes every slot.
		for range 2 {
			if err := f.acquire(ctx, "a"); err != nil {
				t.Fatal(err)
			}
		}
		// A queues five more, then B one: B is served first when a slot
		// frees, though it came last.
		order := make(chan string, 6)
		for range 5 {
			go func() {
				if f.acquire(ctx, "a") == nil {
					order <- "a"
				}
			}()
			synctest.Wait()
		}
		go func() {
			if f.acquire(ctx, "b") == nil {
				order <- "b"
			}
		}()
		synctest.Wait()
		f.release("a")
		synctest.Wait()
		if got := <-order; got != "b" {
			t.Fatalf("the freed slot went to %s, want b", got)
		}
		// A waiter that gives up leaves the queue; the others still get slots.
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := f.acquire(cctx, "c"); err == nil {
			t.Fatal("acquired with every slot held")
		}
		for range 5 {
			f.release("a")
			synctest.Wait()
			if got := <-order; got != "a" {
				t.Fatalf("got %s, want a", got)
			}
		}
		if len(f.waiters) != 0 || f.held["a"] != 1 || f.held["b"] != 1 || f.free != 0 {
			t.Fatalf("waiters %d, held %v, free %d", len(f.waiters), f.held, f.free)
		}
		f.release("a")
		f.release("b")
		if f.free != 2 || len(f.held) != 0 {
			t.Fatalf("free %d, held %v after all releases", f.free, f.held)
		}
	})
}
