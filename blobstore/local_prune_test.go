package blobstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/blobstore"
)

// TestLocalPutWhileDeletePrunes: Delete removes the empty directories above
// a key, so a Put into a sibling directory can find its parent gone between
// creating the directory and the file. Each batch's input lives in its own
// directory under batches/, and inputs are dropped while others upload.
func TestLocalPutWhileDeletePrunes(t *testing.T) {
	t.Parallel()
	store, err := blobstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	ctx := context.Background()
	const rounds, writers = 300, 4
	var wg sync.WaitGroup
	errs := make(chan error, rounds*writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				key := fmt.Sprintf("batches/%d-%d/input", w, i)
				if _, err := store.Put(ctx, key, strings.NewReader("x")); err != nil {
					errs <- fmt.Errorf("put %s: %w", key, err)
					continue
				}
				if err := store.Delete(ctx, key); err != nil {
					errs <- fmt.Errorf("delete %s: %w", key, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
