package persistence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// fakeGroupExec records the batches a groupCommit runs. A batch containing
// a write named in block waits until that write's channel is closed; a
// batch containing a write named in fail fails with that error.
type fakeGroupExec struct {
	mu      sync.Mutex
	batches [][]string
	block   map[string]chan struct{}
	fail    map[string]error
	panicOn string
}

func (f *fakeGroupExec) exec(_ context.Context, batch []string) error {
	f.mu.Lock()
	f.batches = append(f.batches, slices.Clone(batch))
	f.mu.Unlock()

	for _, w := range batch {
		if ch := f.block[w]; ch != nil {
			<-ch
		}
	}
	for _, w := range batch {
		if err := f.fail[w]; err != nil {
			return err
		}
		if w == f.panicOn {
			panic("driver bug")
		}
	}
	return nil
}

func (f *fakeGroupExec) recorded() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

type groupBundle struct {
	g    *groupCommit[string]
	exec *fakeGroupExec
	// hold is the first write, which blocks the one slot until released.
	hold    chan struct{}
	holdErr chan error
}

// setupGroup returns a group with one slot whose first write ("hold") is
// in flight and blocked, so that the writes that follow queue behind it.
func setupGroup(t *testing.T, maxBatch int, fail map[string]error, burstSlots ...int) *groupBundle {
	t.Helper()
	b := &groupBundle{hold: make(chan struct{}), holdErr: make(chan error, 1)}
	b.exec = &fakeGroupExec{block: map[string]chan struct{}{"hold": b.hold}, fail: fail}
	b.g = &groupCommit[string]{exec: b.exec.exec, slots: 1, maxBatch: maxBatch, timeout: time.Minute}
	if len(burstSlots) > 0 {
		b.g.burstSlots = burstSlots[0]
	}
	go func() { b.holdErr <- b.g.write(context.Background(), "hold") }()
	require.Eventually(t, func() bool { return len(b.exec.recorded()) == 1 }, 10*time.Second, time.Millisecond)
	return b
}

// queue starts a write of each name and waits until all of them queue.
func (b *groupBundle) queue(t *testing.T, ctx context.Context, names ...string) map[string]chan error {
	t.Helper()
	out := make(map[string]chan error, len(names))
	start := b.queued()
	for _, n := range names {
		ch := make(chan error, 1)
		out[n] = ch
		go func() { ch <- b.g.write(ctx, n) }()
		// One at a time, so that the queue keeps the order of names.
		require.Eventually(t, func() bool { return b.queued() == start+len(out) }, 10*time.Second, time.Millisecond)
	}
	return out
}

func (b *groupBundle) queued() int {
	b.g.mu.Lock()
	defer b.g.mu.Unlock()
	return len(b.g.queue)
}

func TestGroupCommit_AloneWritesAtOnce(t *testing.T) {
	t.Parallel()
	f := &fakeGroupExec{fail: map[string]error{"bad": errors.New("boom")}}
	g := &groupCommit[string]{exec: f.exec, slots: 2, maxBatch: 8, timeout: time.Minute}
	require.NoError(t, g.write(t.Context(), "a"))
	require.EqualError(t, g.write(t.Context(), "bad"), "boom")
	require.Equal(t, [][]string{{"a"}, {"bad"}}, f.recorded())
	require.Zero(t, g.inFlight, "slots are given back")
}

func TestGroupCommit_QueuedWritesShareAStatement(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		maxBatch int
		queued   int
		want     []int // sizes of the batches after the held one
	}{
		{name: "one group", maxBatch: 32, queued: 5, want: []int{5}},
		{name: "exactly full", maxBatch: 4, queued: 4, want: []int{4}},
		{name: "split at the bound", maxBatch: 4, queued: 10, want: []int{4, 4, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupGroup(t, tc.maxBatch, nil)
			var names []string
			for i := range tc.queued {
				names = append(names, fmt.Sprintf("w%02d", i))
			}
			outs := b.queue(t, t.Context(), names...)
			close(b.hold)
			require.NoError(t, <-b.holdErr)
			for _, n := range names {
				require.NoError(t, <-outs[n], n)
			}
			batches := b.exec.recorded()
			require.Equal(t, []string{"hold"}, batches[0])
			var sizes []int
			var written []string
			for _, batch := range batches[1:] {
				sizes = append(sizes, len(batch))
				written = append(written, batch...)
			}
			require.Equal(t, tc.want, sizes)
			require.Equal(t, names, written, "every write once, oldest first")
			require.Zero(t, b.g.inFlight)
			require.Empty(t, b.g.queue)
		})
	}
}

// A group whose statement the server refused wrote nothing: each write is
// tried alone, so only the bad one fails. Any other failure leaves it
// unknown whether the statement committed, so it is everyone's and is not
// retried.
func TestGroupCommit_FailedGroup(t *testing.T) {
	t.Parallel()
	refused := &pq.Error{Code: "23503", Message: "violates foreign key constraint"}
	lost := errors.New("connection reset by peer")
	t.Run("refused by the server", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t, 32, map[string]error{"bad": refused})
		outs := b.queue(t, t.Context(), "a", "bad", "c")
		close(b.hold)
		require.NoError(t, <-b.holdErr)
		require.NoError(t, <-outs["a"])
		require.ErrorIs(t, <-outs["bad"], refused)
		require.NoError(t, <-outs["c"])
		require.Equal(t, [][]string{{"hold"}, {"a", "bad", "c"}, {"a"}, {"bad"}, {"c"}}, b.exec.recorded())
	})
	t.Run("connection lost", func(t *testing.T) {
		t.Parallel()
		b := setupGroup(t, 32, map[string]error{"bad": lost})
		outs := b.queue(t, t.Context(), "a", "bad")
		close(b.hold)
		require.NoError(t, <-b.holdErr)
		require.ErrorIs(t, <-outs["a"], lost)
		require.ErrorIs(t, <-outs["bad"], lost)
		require.Equal(t, [][]string{{"hold"}, {"a", "bad"}}, b.exec.recorded())
	})
}

// A statement the server rolled back as a deadlock's victim runs again, a
// few times, before its callers see the error.
func TestGroupCommit_DeadlockIsRetried(t *testing.T) {
	t.Parallel()
	deadlock := &pq.Error{Code: "40P01", Message: "deadlock detected"}
	var mu sync.Mutex
	failures := map[string]int{"once": 1, "always": groupAttempts}
	var calls []string
	g := &groupCommit[string]{slots: 1, maxBatch: 8, timeout: time.Minute, exec: func(_ context.Context, batch []string) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, batch[0])
		if failures[batch[0]] > 0 {
			failures[batch[0]]--
			return deadlock
		}
		return nil
	}}
	require.NoError(t, g.write(t.Context(), "once"))
	require.ErrorIs(t, g.write(t.Context(), "always"), deadlock)
	require.Equal(t, []string{"once", "once", "always", "always", "always"}, calls)
}

// A write whose caller gives up while it is queued is never written; one
// already taken into a group is written and reported whatever its context.
func TestGroupCommit_CanceledWhileQueued(t *testing.T) {
	t.Parallel()
	b := setupGroup(t, 32, nil)
	ctx, cancel := context.WithCancel(t.Context())
	gone := b.queue(t, ctx, "gone")
	stays := b.queue(t, t.Context(), "stays")
	cancel()
	require.Equal(t, domain.Canceled, domain.ErrorCode(<-gone["gone"]))
	require.Equal(t, 1, b.queued())
	close(b.hold)
	require.NoError(t, <-b.holdErr)
	require.NoError(t, <-stays["stays"])
	require.Equal(t, [][]string{{"hold"}, {"stays"}}, b.exec.recorded())
}

// With a spacing, a group that would start too soon after the last one
// waits, and the writes that come meanwhile join it: a moderate load is
// grouped too. A write after a quiet spell does not wait.
func TestGroupCommit_Spacing(t *testing.T) {
	t.Parallel()
	f := &fakeGroupExec{}
	slept := make(chan time.Duration)
	wake := make(chan struct{})
	g := &groupCommit[string]{exec: f.exec, slots: 1, maxBatch: 8, timeout: time.Minute, spacing: time.Hour,
		sleep: func(d time.Duration) { slept <- d; <-wake }}
	require.NoError(t, g.write(t.Context(), "first"), "the first write does not wait")
	leader := make(chan error, 1)
	go func() { leader <- g.write(t.Context(), "second") }()
	d := <-slept
	require.Greater(t, d, 59*time.Minute, "it waits out the rest of the spacing")
	b := &groupBundle{g: g, exec: f}
	outs := b.queue(t, t.Context(), "third", "fourth")
	close(wake)
	require.NoError(t, <-leader)
	require.NoError(t, <-outs["third"])
	require.NoError(t, <-outs["fourth"])
	require.Equal(t, [][]string{{"first"}, {"second", "third", "fourth"}}, f.recorded())
}

// While a statement is in flight (the database stalls), a backlog of a
// whole group starts a second statement at once when burstSlots allow it;
// otherwise it waits for the first.
func TestGroupCommit_BacklogStartsAnotherStatement(t *testing.T) {
	t.Parallel()
	for _, burst := range []int{1, 2} {
		t.Run(fmt.Sprint("burst slots ", burst), func(t *testing.T) {
			t.Parallel()
			b := setupGroup(t, 4, nil, burst)
			outs := b.queue(t, t.Context(), "w0", "w1", "w2", "w3")
			fifth := make(chan error, 1)
			go func() { fifth <- b.g.write(t.Context(), "w4") }()
			if burst == 2 {
				require.NoError(t, <-fifth, "written while the held statement is still in flight")
				require.Equal(t, [][]string{{"hold"}, {"w4", "w0", "w1", "w2"}}, b.exec.recorded())
			} else {
				require.Eventually(t, func() bool { return b.queued() == 5 }, 10*time.Second, time.Millisecond)
				outs["w4"] = fifth
			}
			close(b.hold)
			require.NoError(t, <-b.holdErr)
			for n, ch := range outs {
				require.NoError(t, <-ch, n)
			}
			seen := 0
			for _, batch := range b.exec.recorded()[1:] {
				require.LessOrEqual(t, len(batch), 4)
				seen += len(batch)
			}
			require.Equal(t, 5, seen)
			require.Zero(t, b.g.inFlight)
		})
	}
}

// A panic in a group's statement is an error for each of its writes, and
// the group commit keeps working.
func TestGroupCommit_PanicIsAnError(t *testing.T) {
	t.Parallel()
	b := setupGroup(t, 32, nil)
	b.exec.panicOn = "boom"
	outs := b.queue(t, t.Context(), "a", "boom")
	close(b.hold)
	require.NoError(t, <-b.holdErr)
	require.ErrorContains(t, <-outs["a"], "panicked")
	require.ErrorContains(t, <-outs["boom"], "panicked")
	require.NoError(t, b.g.write(t.Context(), "after"))
	require.Zero(t, b.g.inFlight)
}

// Many concurrent writers through several slots: each write is written
// exactly once and every caller hears back.
func TestGroupCommit_Concurrent(t *testing.T) {
	t.Parallel()
	f := &fakeGroupExec{}
	g := &groupCommit[string]{exec: f.exec, slots: 2, maxBatch: 7, timeout: time.Minute}
	const n = 500
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { require.NoError(t, g.write(t.Context(), fmt.Sprint(i))) })
	}
	wg.Wait()
	seen := map[string]int{}
	for _, batch := range f.recorded() {
		require.LessOrEqual(t, len(batch), 7)
		for _, w := range batch {
			seen[w]++
		}
	}
	require.Len(t, seen, n)
	for w, c := range seen {
		require.Equal(t, 1, c, w)
	}
	require.Zero(t, g.inFlight)
}
