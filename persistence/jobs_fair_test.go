package persistence_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// queuedJob is a job a fair-claim case starts with: pending, or running
// under owner (with a live lease, or an expired one).
type queuedJob struct {
	id, account string
	at          int // seconds after t0
	expedited   bool
	owner       string
	expired     bool
}

// queueFixture stores queuedJobs as they stand at now, an hour after t0,
// creating each account once.
type queueFixture struct {
	t        *testing.T
	db       *persistence.DB
	store    *persistence.Jobs
	now      time.Time
	accounts map[string]bool
}

func newQueueFixture(t *testing.T, db *persistence.DB) *queueFixture {
	return &queueFixture{t: t, db: db, store: persistence.NewJobs(db), now: t0.Add(time.Hour), accounts: map[string]bool{}}
}

// account creates the account id unless it exists.
func (f *queueFixture) account(id string) {
	f.t.Helper()
	if !f.accounts[id] {
		f.accounts[id] = true
		require.NoError(f.t, persistence.NewAccounts(f.db).CreateAccount(f.t.Context(), newAccount(id, t0)))
	}
}

// add stores q: pending, or running under owner's lease, which ends a
// minute after now, or a second before it when q is expired.
func (f *queueFixture) add(q queuedJob) {
	f.t.Helper()
	f.account(q.account)
	created := t0.Add(time.Duration(q.at) * time.Second)
	j := &domain.Job{
		ID: q.id, AccountID: q.account, Type: domain.JobTypeStandard, Status: domain.JobPending,
		Threshold: 0.5, Expedited: q.expedited, Created: created, Updated: created,
	}
	if q.owner != "" {
		until := f.now.Add(time.Minute)
		if q.expired {
			until = f.now.Add(-time.Second)
		}
		j.Status, j.LeaseOwner, j.LeaseExpiresAt, j.Started, j.Attempts = domain.JobRunning, q.owner, &until, &created, 1
	}
	require.NoError(f.t, f.store.CreateJob(f.t.Context(), j))
}

// fairClaim is one ClaimJobs call and the jobs it must return.
type fairClaim struct {
	owner        string
	limit, capAt int
	want         []string
}

// claimFairlyCases are the claims of a fair queue, each from its own queue.
var claimFairlyCases = []struct {
	name   string
	jobs   []queuedJob
	claims []fairClaim
}{{
	name: "least running account first, though its job is newer",
	jobs: []queuedJob{
		{id: "a-run1", account: "a", at: 0, owner: "x"}, {id: "a-run2", account: "a", at: 1, owner: "y"},
		{id: "a3", account: "a", at: 2}, {id: "b1", account: "b", at: 9},
	},
	claims: []fairClaim{{owner: "w", limit: 1, want: []string{"b1"}}},
}, {
	name: "ties go to the account with the oldest job",
	jobs: []queuedJob{
		{id: "a1", account: "a", at: 2}, {id: "b1", account: "b", at: 1}, {id: "c1", account: "c", at: 3},
	},
	claims: []fairClaim{
		{owner: "w", limit: 1, want: []string{"b1"}},
		{owner: "w", limit: 1, want: []string{"a1"}},
		{owner: "w", limit: 1, want: []string{"c1"}},
	},
}, {
	name: "expedited orders only the account's own jobs",
	jobs: []queuedJob{
		{id: "a1", account: "a", at: 1}, {id: "b1", account: "b", at: 2}, {id: "b-fast", account: "b", at: 3, expedited: true},
	},
	claims: []fairClaim{
		{owner: "w", limit: 1, want: []string{"a1"}},
		{owner: "w", limit: 1, want: []string{"b-fast"}},
		{owner: "w", limit: 1, want: []string{"b1"}},
	},
}, {
	name: "accounts alternate in one claim",
	jobs: []queuedJob{
		{id: "a1", account: "a", at: 1}, {id: "a2", account: "a", at: 2}, {id: "a3", account: "a", at: 3},
		{id: "b1", account: "b", at: 4}, {id: "b2", account: "b", at: 5}, {id: "b3", account: "b", at: 6},
	},
	claims: []fairClaim{{owner: "w", limit: 4, want: []string{"a1", "a2", "b1", "b2"}}},
}, {
	name: "the cap holds while another account waits",
	jobs: []queuedJob{
		{id: "b-run1", account: "b", at: 0, owner: "x"}, {id: "b-run2", account: "b", at: 0, owner: "x"},
		{id: "b-run3", account: "b", at: 0, owner: "x"},
		{id: "a1", account: "a", at: 1}, {id: "a2", account: "a", at: 2}, {id: "a3", account: "a", at: 3}, {id: "a4", account: "a", at: 4},
		{id: "b4", account: "b", at: 5}, {id: "b5", account: "b", at: 6},
	},
	claims: []fairClaim{{owner: "w", limit: 4, capAt: 2, want: []string{"a1", "a2", "b4", "b5"}}},
}, {
	name: "no cap: the least running account takes what it is owed",
	jobs: []queuedJob{
		{id: "b-run1", account: "b", at: 0, owner: "x"}, {id: "b-run2", account: "b", at: 0, owner: "x"},
		{id: "b-run3", account: "b", at: 0, owner: "x"},
		{id: "a1", account: "a", at: 1}, {id: "a2", account: "a", at: 2}, {id: "a3", account: "a", at: 3}, {id: "a4", account: "a", at: 4},
		{id: "b4", account: "b", at: 5}, {id: "b5", account: "b", at: 6},
	},
	claims: []fairClaim{{owner: "w", limit: 4, want: []string{"a1", "a2", "a3", "a4"}}},
}, {
	name: "the cap counts the claimer's own jobs only",
	jobs: []queuedJob{
		{id: "a-run", account: "a", at: 0, owner: "w"},
		{id: "a1", account: "a", at: 1}, {id: "b1", account: "b", at: 2}, {id: "b2", account: "b", at: 3},
	},
	claims: []fairClaim{
		// w holds one of a's jobs: a gets no more from w, and b only one
		// while a's job waits.
		{owner: "w", limit: 2, capAt: 1, want: []string{"b1"}},
		// x holds none: a (running 1, oldest job) then b.
		{owner: "x", limit: 2, capAt: 1, want: []string{"a1", "b2"}},
	},
}, {
	name: "another claimer is not capped by w's jobs",
	jobs: []queuedJob{
		{id: "a-run", account: "a", at: 0, owner: "w"},
		{id: "a1", account: "a", at: 1}, {id: "b1", account: "b", at: 2}, {id: "b2", account: "b", at: 3},
	},
	claims: []fairClaim{
		{owner: "x", limit: 2, capAt: 1, want: []string{"a1", "b1"}},
	},
}, {
	name: "no cap when one account is alone in the queue",
	jobs: []queuedJob{
		{id: "a1", account: "a", at: 1}, {id: "a2", account: "a", at: 2}, {id: "a3", account: "a", at: 3},
		{id: "b-run", account: "b", at: 0, owner: "x"},
	},
	claims: []fairClaim{{owner: "w", limit: 4, capAt: 1, want: []string{"a1", "a2", "a3"}}},
}, {
	name: "the cap lifts once the other account's jobs are all claimed",
	jobs: []queuedJob{
		{id: "a1", account: "a", at: 1}, {id: "a2", account: "a", at: 2}, {id: "a3", account: "a", at: 3},
		{id: "b1", account: "b", at: 4},
	},
	claims: []fairClaim{{owner: "w", limit: 4, capAt: 1, want: []string{"a1", "a2", "a3", "b1"}}},
}, {
	name: "an expired lease is queued work, not running work",
	jobs: []queuedJob{
		{id: "a-dead", account: "a", at: 0, owner: "dead", expired: true},
		{id: "a-run", account: "a", at: 1, owner: "x"},
		{id: "b1", account: "b", at: 2}, {id: "b-run", account: "b", at: 3, owner: "x"},
		{id: "b-run2", account: "b", at: 4, owner: "x"},
	},
	claims: []fairClaim{
		{owner: "w", limit: 1, want: []string{"a-dead"}},
		{owner: "w", limit: 1, want: []string{"b1"}},
	},
}}

// TestJobs_ClaimFairly checks the claim order of docs/operations.md#scaling: least running work
// first (every owner's live leases), ties to the account with the oldest
// job, expedited only within an account, and the cap on the claimer's own
// jobs of an account while another account waits.
func TestJobs_ClaimFairly(t *testing.T) {
	t.Parallel()
	for _, tc := range claimFairlyCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
				ctx := t.Context()
				q := newQueueFixture(t, db)
				store, now := q.store, q.now
				for _, j := range tc.jobs {
					q.add(j)
				}
				for i, c := range tc.claims {
					got, err := store.ClaimJobs(ctx, c.owner, now, now.Add(time.Minute), c.limit, c.capAt)
					require.NoError(t, err)
					ids := make([]string, len(got))
					for k, j := range got {
						ids[k] = j.ID
						require.Equal(t, c.owner, j.LeaseOwner)
					}
					sort.Strings(ids)
					require.Equal(t, c.want, ids, "claim %d", i)
				}
			})
		})
	}
}

// TestJobs_ClaimFairlyAtScale fills the queue with one account's backlog
// and a few jobs of many others: a claim still reaches the newest account
// at once, and each account gets one job before any gets a second.
func TestJobs_ClaimFairlyAtScale(t *testing.T) {
	t.Parallel()
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		store := persistence.NewJobs(db)
		const backlog, others = 2000, 20
		var jobs []*domain.Job
		for a := range others + 1 {
			id := fmt.Sprintf("acct-%02d", a)
			require.NoError(t, persistence.NewAccounts(db).CreateAccount(ctx, newAccount(id, t0)))
			n := 2
			if a == 0 {
				n = backlog
			}
			for i := range n {
				// The backlog is older than every other account's jobs.
				created := t0.Add(time.Duration(a*backlog+i) * time.Millisecond)
				jobs = append(jobs, &domain.Job{
					ID: fmt.Sprintf("%s-%04d", id, i), AccountID: id, Type: domain.JobTypeStandard,
					Status: domain.JobPending, Threshold: 0.5, Created: created, Updated: created,
				})
			}
		}
		for _, j := range jobs {
			require.NoError(t, store.CreateJob(ctx, j))
		}
		now := t0.Add(time.Hour)
		got, err := store.ClaimJobs(ctx, "w", now, now.Add(time.Minute), others+1, 4)
		require.NoError(t, err)
		perAccount := map[string]int{}
		for _, j := range got {
			perAccount[j.AccountID]++
		}
		require.Len(t, perAccount, others+1, "one job of every account")
		for a, n := range perAccount {
			require.Equal(t, 1, n, a)
		}
	})
}
