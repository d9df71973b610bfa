package batches_test

import (
	"bufio"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/blobstore"
	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/batches"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/jobs"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/policies"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// The batch service on the real stores (both backends) and the local blob
// store, with its workers and the job workers running: below the HTTP layer,
// a batch goes from upload to its output file, a bad file ends it in ERROR,
// a cancel ends it at once.

// lines renders an output line as refId and the job's outcome.
type lines struct{}

func (lines) EncodeBatchLine(_ *domain.BatchJob, o *domain.BatchOutcome) ([]byte, error) {
	out := map[string]string{"refId": o.RefID, "status": string(o.JobStatus)}
	if o.Result != nil {
		out["result"] = string(o.Result.Report.Result)
	}
	return json.Marshal(out)
}

type batchFixture struct {
	svc     *batches.Service
	account *domain.Account
	policy  string
}

func newBatchFixture(t *testing.T, db *persistence.DB) *batchFixture {
	t.Helper()
	ctx := t.Context()
	clock := domain.SystemClock{}
	tokens := paging.NewTokens([]byte("secret"))
	account := &domain.Account{ID: domain.NewID(), Name: "acme", Type: domain.AccountPolicyFirst,
		WebhookSecret: "whsec_x", Created: clock.Now(), Updated: clock.Now()}
	require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, account))
	ps := policies.NewService(persistence.NewPolicies(db), clock, tokens, policies.Config{}, evaluation.NewPlans(10))
	p, _, err := ps.Create(ctx, account, "spam", `LABEL "Spam" { =("buy now") }`)
	require.NoError(t, err)
	js := jobs.NewService(persistence.NewJobs(db), ps, persistence.NewAccounts(db), clock, tokens,
		jobs.Config{PollInterval: 10 * time.Millisecond}, nil)
	blobs, err := blobstore.NewLocal(t.TempDir())
	require.NoError(t, err)
	svc := batches.NewService(batches.Deps{
		Store: persistence.NewBatchJobs(db), Blobs: blobs, Jobs: persistence.NewJobs(db), JobQueue: js,
		Policies: ps, Clock: clock, Signer: batches.NewURLSigner([]byte("signing")), Lines: lines{},
	}, batches.Config{PollInterval: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { js.RunWorkers(ctx); done <- struct{}{} }()
	go func() { svc.RunWorkers(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &batchFixture{svc: svc, account: account, policy: p.ID}
}

// upload creates a batch and uploads file through its link.
func (f *batchFixture) upload(t *testing.T, file string) *domain.BatchJob {
	t.Helper()
	ctx := t.Context()
	b, link, err := f.svc.Create(ctx, f.account, batches.CreateRequest{PolicyID: f.policy})
	require.NoError(t, err)
	require.NotNil(t, link)
	require.Empty(t, link.Presigned, "the local store makes no URLs: the API's endpoint with a signature")
	exp, err := strconv.ParseInt(link.Query.Get("expires"), 10, 64)
	require.NoError(t, err)
	_, err = f.svc.Upload(ctx, b.ID, exp, link.Query.Get("signature"), strings.NewReader(file))
	require.NoError(t, err)
	_, err = f.svc.Upload(ctx, b.ID, exp, link.Query.Get("signature")+"x", strings.NewReader(file))
	require.Equal(t, domain.PermissionDenied, domain.ErrorCode(err), "an altered signature")
	return b
}

func (f *batchFixture) waitTerminal(t *testing.T, id string) *domain.BatchJob {
	t.Helper()
	var b *domain.BatchJob
	require.Eventually(t, func() bool {
		var err error
		b, err = f.svc.Get(t.Context(), f.account, id)
		require.NoError(t, err)
		return b.State.Terminal()
	}, 60*time.Second, 10*time.Millisecond)
	return b
}

func TestBatchService(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		f := newBatchFixture(t, db)
		ctx := t.Context()

		b := f.waitTerminal(t, f.upload(t, "ref_id,type,content\na,text,buy now\nb,text,hello\n").ID)
		require.Equal(t, domain.BatchCompleted, b.State)
		require.Equal(t, 2, b.ItemCount)
		link := f.svc.OutputLink(ctx, b)
		require.NotNil(t, link)
		exp, err := strconv.ParseInt(link.Query.Get("expires"), 10, 64)
		require.NoError(t, err)
		rc, _, err := f.svc.Download(ctx, b.ID, exp, link.Query.Get("signature"))
		require.NoError(t, err)
		defer rc.Close()
		var got []map[string]string
		for sc := bufio.NewScanner(rc); sc.Scan(); {
			var l map[string]string
			require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
			got = append(got, l)
		}
		require.Equal(t, []map[string]string{
			{"refId": "a", "status": "completed", "result": string(rules.OutcomeTrue)},
			{"refId": "b", "status": "completed", "result": string(rules.OutcomeFalse)},
		}, got, "one line per item, in input order")

		bad := f.waitTerminal(t, f.upload(t, "ref_id,type,content\n,text,x\n").ID)
		require.Equal(t, domain.BatchError, bad.State)
		require.Equal(t, domain.BatchErrInvalidInput, bad.ErrorCode)
		require.Contains(t, bad.ErrorMessage, "line 2: ref_id is empty")
		require.Nil(t, f.svc.OutputLink(ctx, bad))

		created, _, err := f.svc.Create(ctx, f.account, batches.CreateRequest{PolicyID: f.policy})
		require.NoError(t, err)
		cancelled, err := f.svc.Cancel(ctx, f.account, created.ID)
		require.NoError(t, err)
		require.Equal(t, domain.BatchCancelled, cancelled.State)
		_, err = f.svc.Cancel(ctx, &domain.Account{ID: "another"}, created.ID)
		require.Equal(t, domain.NotFound, domain.ErrorCode(err), "another account's batch")
	})
}
