package persistence_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

type batchBundle struct {
	store *persistence.BatchJobs
	jobs  *persistence.Jobs
	hooks *persistence.Webhooks
}

func setupBatches(t *testing.T, db *persistence.DB) batchBundle {
	t.Helper()
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(context.Background(), newAccount("a1", t0)))
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(context.Background(), newAccount("a2", t0)))
	return batchBundle{store: persistence.NewBatchJobs(db), jobs: persistence.NewJobs(db), hooks: persistence.NewWebhooks(db)}
}

func newBatch(id, account string, created time.Time) *domain.BatchJob {
	return &domain.BatchJob{
		ID: id, AccountID: account, Name: "n-" + id, PolicyID: "p1", PolicyKey: "k", PolicyVersionID: "v1",
		WebhookURL: "https://example.com/hook", State: domain.BatchInitialized, Created: created, Updated: created,
	}
}

func TestBatchStore_CreateGetList(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		b := setupBatches(t, db)
		for i := 0; i < 3; i++ {
			require.NoError(t, b.store.CreateBatch(ctx, newBatch(fmt.Sprintf("b%d", i), "a1", t0.Add(time.Duration(i)*time.Second))))
		}
		require.NoError(t, b.store.CreateBatch(ctx, newBatch("other", "a2", t0)))
		requireCode(t, b.store.CreateBatch(ctx, newBatch("b0", "a1", t0)), domain.AlreadyExists)
		requireCode(t, b.store.CreateBatch(ctx, newBatch("x", "nobody", t0)), domain.NotFound)

		got, err := b.store.GetBatch(ctx, "a1", "b1")
		require.NoError(t, err)
		want := newBatch("b1", "a1", t0.Add(time.Second))
		want.Created, want.Updated = persistence.StoredTime(want.Created), persistence.StoredTime(want.Updated)
		require.Equal(t, want, got)
		_, err = b.store.GetBatch(ctx, "a2", "b1")
		requireCode(t, err, domain.NotFound)
		_, err = b.store.GetBatchByID(ctx, "b1")
		require.NoError(t, err)

		all, err := b.store.ListBatches(ctx, "a1", domain.BatchFilter{}, 100)
		require.NoError(t, err)
		require.Equal(t, []string{"b2", "b1", "b0"}, batchIDs(all))
		some, err := b.store.ListBatches(ctx, "a1", domain.BatchFilter{IDs: []string{"b0", "b2", "other"}}, 100)
		require.NoError(t, err)
		require.Equal(t, []string{"b2", "b0"}, batchIDs(some))

		_, err = b.store.SetBatchInput(ctx, "b0", "batches/b0/input-1", t0)
		require.NoError(t, err)
		queued, err := b.store.ListBatches(ctx, "a1", domain.BatchFilter{States: []domain.BatchState{domain.BatchQueued, domain.BatchError}}, 100)
		require.NoError(t, err)
		require.Equal(t, []string{"b0"}, batchIDs(queued))
		both, err := b.store.ListBatches(ctx, "a1", domain.BatchFilter{IDs: []string{"b1"}, States: []domain.BatchState{domain.BatchQueued}}, 100)
		require.NoError(t, err)
		require.Empty(t, both)
	})
}

func batchIDs(bs []*domain.BatchJob) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return out
}

// requireClaimGuards claims the queued batch b1 as w1 and checks that a
// second claim finds nothing, that transitions by another owner, from a
// stale state or of an unknown batch fail, and that w1 then starts
// preprocessing, after which the input can no longer change.
func requireClaimGuards(t *testing.T, b batchBundle) {
	t.Helper()
	ctx := context.Background()
	got, err := b.store.ClaimBatch(ctx, "w1", t0, t0.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, "b1", got.ID)
	require.Equal(t, "batches/b1/input-2", got.InputKey)
	_, err = b.store.ClaimBatch(ctx, "w2", t0, t0.Add(time.Minute))
	requireCode(t, err, domain.NotFound)
	_, err = b.store.TransitionBatch(ctx, domain.BatchTransition{ID: "b1", From: domain.BatchQueued, To: domain.BatchPreprocessing, Owner: "w2", Now: t0})
	requireCode(t, err, domain.Aborted)
	_, err = b.store.TransitionBatch(ctx, domain.BatchTransition{ID: "b1", From: domain.BatchInitialized, To: domain.BatchQueued, Now: t0})
	requireCode(t, err, domain.Aborted)
	_, err = b.store.TransitionBatch(ctx, domain.BatchTransition{ID: "nope", From: domain.BatchQueued, To: domain.BatchPreprocessing, Now: t0})
	requireCode(t, err, domain.NotFound)

	got, err = b.store.TransitionBatch(ctx, domain.BatchTransition{ID: "b1", From: domain.BatchQueued, To: domain.BatchPreprocessing, Owner: "w1", Now: t0})
	require.NoError(t, err)
	require.Equal(t, domain.BatchPreprocessing, got.State)
	_, err = b.store.SetBatchInput(ctx, "b1", "batches/b1/input-3", t0)
	requireCode(t, err, domain.FailedPrecondition)
}

func TestBatchStore_GuardedTransitions(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		b := setupBatches(t, db)
		require.NoError(t, b.store.CreateBatch(ctx, newBatch("b1", "a1", t0)))

		// The upload: INITIALIZED -> QUEUED, and again (re-upload) while queued.
		prev, err := b.store.SetBatchInput(ctx, "b1", "batches/b1/input-1", t0)
		require.NoError(t, err)
		require.Empty(t, prev)
		prev, err = b.store.SetBatchInput(ctx, "b1", "batches/b1/input-2", t0)
		require.NoError(t, err)
		require.Equal(t, "batches/b1/input-1", prev)

		// Claim, then a transition by a non-owner and a stale one are ABORTED.
		requireClaimGuards(t, b)

		// An expired lease lets another worker claim; the old owner's steps fail.
		got, err := b.store.ClaimBatch(ctx, "w2", t0.Add(2*time.Minute), t0.Add(3*time.Minute))
		require.NoError(t, err)
		require.Equal(t, "w2", got.LeaseOwner)
		requireCode(t, b.store.RenewBatchLease(ctx, "b1", "w1", t0.Add(time.Hour), t0), domain.Aborted)
		require.NoError(t, b.store.RenewBatchLease(ctx, "b1", "w2", t0.Add(4*time.Minute), t0))
		n := 3
		got, err = b.store.TransitionBatch(ctx, domain.BatchTransition{ID: "b1", From: domain.BatchPreprocessing, To: domain.BatchPreprocessed, Owner: "w2", Now: t0, ItemCount: &n})
		require.NoError(t, err)
		require.Equal(t, 3, got.ItemCount)

		// Items: written by the owner while preprocessed only.
		items := []*domain.BatchItem{
			{Seq: 0, RefID: "r0", JobID: "j0", ContentHash: "h0", Status: domain.BatchItemPending},
			{Seq: 1, RefID: "r1", JobID: "j1", ContentHash: "h1", Status: domain.BatchItemPending},
			{Seq: 2, RefID: "r2", JobID: "j2", ContentHash: "h2", Status: domain.BatchItemPending},
		}
		requireCode(t, b.store.InsertBatchItems(ctx, "b1", "w1", items), domain.Aborted)
		require.NoError(t, b.store.InsertBatchItems(ctx, "b1", "w2", items))
		requireCode(t, b.store.InsertBatchItems(ctx, "b1", "w2", items[:1]), domain.AlreadyExists)
		requireCode(t, b.store.MarkBatchItemsSubmitted(ctx, "b1", "w1", 0, 2, t0), domain.Aborted)
		require.NoError(t, b.store.MarkBatchItemsSubmitted(ctx, "b1", "w2", 0, 2, t0))
		listed, err := b.store.ListBatchItems(ctx, "b1", 1, 10)
		require.NoError(t, err)
		require.Len(t, listed, 2)
		require.Equal(t, domain.BatchItemSubmitted, listed[0].Status)
		require.Equal(t, domain.BatchItemPending, listed[1].Status)

		// Jobs for two of them; cancel cancels the pending ones only.
		for i, st := range []domain.JobStatus{domain.JobPending, domain.JobRunning} {
			j := &domain.Job{ID: fmt.Sprintf("j%d", i), AccountID: "a1", Type: domain.JobTypeBatch, Status: st,
				PolicyID: "p1", Threshold: 0.5, Created: t0, Updated: t0}
			if st == domain.JobRunning {
				until := t0.Add(time.Hour)
				j.LeaseOwner, j.LeaseExpiresAt = "jw", &until
			}
			require.NoError(t, b.jobs.CreateJob(ctx, j))
		}
		processed, failed, err := b.store.BatchProgress(ctx, "b1")
		require.NoError(t, err)
		require.Equal(t, [2]int{0, 0}, [2]int{processed, failed})

		hook := &domain.WebhookEvent{ID: "e1", AccountID: "a1", URL: "https://example.com/hook", Type: domain.WebhookBatchCancelled,
			SubjectKind: "batch_job", SubjectID: "b1", Created: t0}
		got, err = b.store.TransitionBatch(ctx, domain.BatchTransition{ID: "b1", From: domain.BatchPreprocessed, To: domain.BatchCancelled, Now: t0, Webhook: hook})
		require.NoError(t, err)
		require.Equal(t, domain.BatchCancelled, got.State)
		require.NotNil(t, got.Completed)
		require.Empty(t, got.LeaseOwner)
		_, err = b.hooks.GetWebhook(ctx, "e1")
		require.NoError(t, err)
		j0, err := b.jobs.GetJob(ctx, "a1", "j0")
		require.NoError(t, err)
		require.Equal(t, domain.JobCanceled, j0.Status)
		j1, err := b.jobs.GetJob(ctx, "a1", "j1")
		require.NoError(t, err)
		require.Equal(t, domain.JobRunning, j1.Status, "a running job is left to finish")
		processed, failed, err = b.store.BatchProgress(ctx, "b1")
		require.NoError(t, err)
		require.Equal(t, [2]int{1, 1}, [2]int{processed, failed})
		outcomes, err := b.store.ListBatchOutcomes(ctx, "b1", 0, 10)
		require.NoError(t, err)
		require.Len(t, outcomes, 3)
		require.Equal(t, domain.JobCanceled, outcomes[0].JobStatus)
		require.Equal(t, domain.JobRunning, outcomes[1].JobStatus)
		require.Equal(t, domain.JobStatus(""), outcomes[2].JobStatus)
		require.Equal(t, "h2", outcomes[2].ContentHash)

		// Terminal: nothing moves it, renewals fail, it is never claimed.
		_, err = b.store.TransitionBatch(ctx, domain.BatchTransition{ID: "b1", From: domain.BatchPreprocessed, To: domain.BatchSubmitted, Owner: "w2", Now: t0})
		requireCode(t, err, domain.Aborted)
		requireCode(t, b.store.RenewBatchLease(ctx, "b1", "w2", t0.Add(time.Hour), t0), domain.Aborted)
		_, err = b.store.ClaimBatch(ctx, "w3", t0.Add(time.Hour), t0.Add(2*time.Hour))
		requireCode(t, err, domain.NotFound)
	})
}

// Of many racing claimers exactly one gets the batch.
func TestBatchStore_ClaimRace(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		b := setupBatches(t, db)
		require.NoError(t, b.store.CreateBatch(ctx, newBatch("b1", "a1", t0)))
		_, err := b.store.SetBatchInput(ctx, "b1", "batches/b1/input-1", t0)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := b.store.ClaimBatch(ctx, fmt.Sprintf("w%d", i), t0, t0.Add(time.Minute))
				if err == nil && got != nil {
					mu.Lock()
					winners++
					mu.Unlock()
				} else if code := domain.ErrorCode(err); code != domain.NotFound && code != domain.Unavailable {
					t.Errorf("claim: %v", err)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, 1, winners)
	})
}

func TestBatchStore_AwaitingUpload(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := context.Background()
		b := setupBatches(t, db)
		require.NoError(t, b.store.CreateBatch(ctx, newBatch("old", "a1", t0)))
		require.NoError(t, b.store.CreateBatch(ctx, newBatch("new", "a1", t0.Add(time.Hour))))
		require.NoError(t, b.store.CreateBatch(ctx, newBatch("up", "a1", t0.Add(time.Hour))))
		_, err := b.store.SetBatchInput(ctx, "up", "k", t0)
		require.NoError(t, err)
		got, err := b.store.ListAwaitingUpload(ctx, t0.Add(time.Minute), 10)
		require.NoError(t, err)
		require.Equal(t, []string{"new"}, batchIDs(got))
	})
}
