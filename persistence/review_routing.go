package persistence

// Routing of recorded job results into review queues (docs/review.md#routing):
// in the transaction that records them, for every write path (the fast
// path, workers, streams, batches, label evaluation), from routes cached
// per account. A process without any queue pays one cached flag read per
// recorded job.

import (
	"context"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// reviewRoutesTTL bounds how long a queue change made by another process
// (replica) goes unseen by this one's routing; this process's own changes
// invalidate at once.
const reviewRoutesTTL = 5 * time.Second

// reviewRoutesMaxAccounts bounds the per-account cache (least recently
// used accounts go first).
const reviewRoutesMaxAccounts = 10000

// reviewRoutes caches whether any queue exists and each account's queues.
type reviewRoutes struct {
	mu        sync.RWMutex
	anyAt     time.Time
	any       bool
	byAccount *lru.Cache[string, reviewRouteEntry] // made on first use
	now       func() time.Time
}

type reviewRouteEntry struct {
	queues []*domain.ReviewQueue
	at     time.Time
}

func (c *reviewRoutes) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// invalidate forgets the account's queues and the any flag.
func (c *reviewRoutes) invalidate(accountID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byAccount != nil {
		c.byAccount.Remove(accountID)
	}
	c.anyAt = time.Time{}
}

// anyQueues reports whether some account has a queue.
func (c *reviewRoutes) anyQueues(ctx context.Context, q sqlx.QueryerContext) (bool, error) {
	now := c.clock()
	c.mu.RLock()
	any, fresh := c.any, !c.anyAt.IsZero() && now.Sub(c.anyAt) < reviewRoutesTTL
	c.mu.RUnlock()
	if fresh {
		return any, nil
	}
	var n int
	if err := sqlx.GetContext(ctx, q, &n, `SELECT COUNT(*) FROM (SELECT 1 FROM review_queues LIMIT 1) AS q`); err != nil {
		return false, err
	}
	c.mu.Lock()
	c.any, c.anyAt = n > 0, now
	c.mu.Unlock()
	return n > 0, nil
}

// queuesOf returns the account's queues.
func (c *reviewRoutes) queuesOf(ctx context.Context, q sqlx.QueryerContext, accountID string) ([]*domain.ReviewQueue, error) {
	now := c.clock()
	c.mu.RLock()
	cache := c.byAccount
	c.mu.RUnlock()
	if cache != nil {
		if e, ok := cache.Get(accountID); ok && now.Sub(e.at) < reviewRoutesTTL {
			return e.queues, nil
		}
	}
	queues, err := reviewQueuesOf(ctx, q, accountID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.byAccount == nil {
		c.byAccount, _ = lru.New[string, reviewRouteEntry](reviewRoutesMaxAccounts) // fails only for a size <= 0
	}
	cache = c.byAccount
	c.mu.Unlock()
	cache.Add(accountID, reviewRouteEntry{queues: queues, at: now})
	return queues, nil
}

// routeOutcome inserts, in tx, one review item per queue of the job's
// account per result one of the queue's routes matches (once per queue and
// result). job.AccountID "" means it is read from the job's row, and so is
// the content when input is nil and something matched.
func (db *DB) routeOutcome(ctx context.Context, tx *sqlx.Tx, job domain.ReviewJob, input []domain.ContentItem, results []*domain.JobResult) error {
	if len(results) == 0 {
		return nil
	}
	if any, err := db.review.anyQueues(ctx, tx); err != nil || !any {
		return err
	}
	if job.AccountID == "" {
		var j struct {
			AccountID string `db:"account_id"`
			PolicyID  string `db:"policy_id"`
			LabelID   string `db:"label_id"`
		}
		if err := tx.GetContext(ctx, &j, tx.Rebind(`SELECT account_id, policy_id, label_id FROM jobs WHERE id = ?`), job.ID); err != nil {
			return err
		}
		job.AccountID, job.PolicyID, job.LabelID = j.AccountID, j.PolicyID, j.LabelID
	}
	queues, err := db.review.queuesOf(ctx, tx, job.AccountID)
	if err != nil {
		return err
	}
	if queues = enteredQueues(queues, job, results); len(queues) == 0 {
		return nil
	}
	if queues, err = db.liveQueues(ctx, tx, job.AccountID, queues); err != nil || len(queues) == 0 {
		return err
	}
	if input == nil {
		if input, err = jobInput(ctx, tx, job.ID); err != nil {
			return err
		}
	}
	items, err := db.reviewItemRows(job, queues, input, results)
	if err != nil {
		return err
	}
	return db.execRows(ctx, tx, items, reviewItemConflict)
}

// liveQueues returns those of queues that still exist: a queue deleted
// since the routes were cached (by another replica, or meanwhile) would
// fail its items' foreign key, and the recording of the results with them.
// On PostgreSQL the queues returned are share-locked until tx ends, so that
// a deletion waits for the items instead of failing them; SQLite's writer
// lock already holds every other writer off.
func (db *DB) liveQueues(ctx context.Context, tx *sqlx.Tx, accountID string, queues []*domain.ReviewQueue) ([]*domain.ReviewQueue, error) {
	ids := make([]string, len(queues))
	for i, q := range queues {
		ids[i] = q.ID
	}
	lock := ""
	if db.Dialect == Postgres {
		lock = " FOR KEY SHARE"
	}
	var live []string
	if err := selectIn(ctx, tx, &live, `SELECT id FROM review_queues WHERE id IN (?)`+lock, ids); err != nil {
		return nil, err
	}
	if len(live) == len(ids) {
		return queues, nil
	}
	db.review.invalidate(accountID)
	return slices.DeleteFunc(slices.Clone(queues), func(q *domain.ReviewQueue) bool { return !slices.Contains(live, q.ID) }), nil
}

// enteredQueues returns those of queues that one of results enters.
func enteredQueues(queues []*domain.ReviewQueue, job domain.ReviewJob, results []*domain.JobResult) []*domain.ReviewQueue {
	var out []*domain.ReviewQueue
	for _, q := range queues {
		for _, r := range results {
			if q.Matches(job, r.Report) != nil {
				out = append(out, q)
				break
			}
		}
	}
	return out
}

// jobInput reads the content of a job's row.
func jobInput(ctx context.Context, tx *sqlx.Tx, id string) ([]domain.ContentItem, error) {
	var r struct {
		Input  string `db:"input"`
		Packed []byte `db:"input_packed"`
	}
	if err := tx.GetContext(ctx, &r, tx.Rebind(`SELECT `+jobInputColumns+` FROM jobs WHERE id = ?`), id); err != nil {
		return nil, err
	}
	var in []domain.ContentItem
	if r.Packed == nil && r.Input == "" {
		return in, nil
	}
	err := readJSONColumn(r.Packed, r.Input, &in)
	return in, err
}

// reviewItemInsertColumns and their PostgreSQL types are the columns a new
// review item is written with.
var (
	reviewItemInsertColumns = []string{"id", "account_id", "queue_id", "queue_priority", "job_id", "job_result_id",
		"machine", "state", "sla_deadline", "position", "content", "content_blob", "content_size", "created"}
	reviewItemColumnTypes = []string{"text", "text", "text", "integer", "text", "text",
		"text", "text", "timestamptz", "timestamptz", "bytea", "text", "bigint", "timestamptz"}
)

// reviewItemConflict keeps a result from entering a queue twice.
const reviewItemConflict = ` ON CONFLICT (queue_id, job_result_id) DO NOTHING`

// reviewItemRows returns the review items of the results of job that the
// routes of queues take (once per queue and result), with the content of
// their entries in input sealed: what routeOutcome writes, built in memory
// for the grouped write of finished jobs (job_finish_postgres.go).
func (db *DB) reviewItemRows(job domain.ReviewJob, queues []*domain.ReviewQueue, input []domain.ContentItem, results []*domain.JobResult) (rowsInsert, error) {
	items := rowsInsert{table: "review_items", columns: reviewItemInsertColumns}
	for _, r := range results {
		for _, q := range queues {
			if m := q.Matches(job, r.Report); m != nil {
				if err := db.addReviewItem(&items, job, q, r, m, input); err != nil {
					return items, err
				}
			}
		}
	}
	return items, nil
}

// reviewItemsOf is reviewItemRows of the queues of job's account, from the
// routes cache; no rows, without a read, when no queue exists anywhere.
func (db *DB) reviewItemsOf(ctx context.Context, job domain.ReviewJob, input []domain.ContentItem, results []*domain.JobResult) (rowsInsert, error) {
	if len(results) == 0 {
		return rowsInsert{}, nil
	}
	if any, err := db.review.anyQueues(ctx, db.DB); err != nil || !any {
		return rowsInsert{}, err
	}
	queues, err := db.review.queuesOf(ctx, db.DB, job.AccountID)
	if err != nil {
		return rowsInsert{}, err
	}
	return db.reviewItemRows(job, queues, input, results)
}

// addReviewItem appends the item of result r in queue q (its matches m) to
// items.
func (db *DB) addReviewItem(items *rowsInsert, job domain.ReviewJob, q *domain.ReviewQueue, r *domain.JobResult, m []domain.ReviewMatch, input []domain.ContentItem) error {
	items.table, items.columns = "review_items", reviewItemInsertColumns
	machine, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var content []byte
	var blob any
	if r.Index >= 0 && r.Index < len(input) {
		if content, err = db.reviewBox().sealContent(job.AccountID, &input[r.Index]); err != nil {
			return err
		}
		blob = db.reviewContentBlob(&input[r.Index])
	}
	created := StoredTime(r.Created)
	var deadline *time.Time
	if q.SLAMinutes > 0 {
		d := created.Add(time.Duration(q.SLAMinutes) * time.Minute)
		deadline = &d
	}
	items.rows = append(items.rows, []any{domain.NewID(), job.AccountID, q.ID, q.Priority, job.ID, r.ID,
		string(machine), "open", deadline, created, content, blob, int64(len(content)), created})
	return nil
}

// contentBox seals review content: AES-256-GCM under a key derived from
// the server key as the webhook secrets' is (secrets.go), with its own
// HKDF info; the account id is the additional data.
type contentBox struct{ aead cipher.AEAD }

const reviewContentKeyInfo = "contenteval review content v1"

// errReviewUnsealed is the cause when retained review content does not open.
var errReviewUnsealed = errors.New("persistence: sealed review content does not open with this server key")

var errNoContentKey = errors.New("persistence: review content cannot be sealed or opened without the server key (EncryptSecretsWith)")

func (db *DB) reviewBox() *contentBox { return db.content }

func (b *contentBox) sealContent(account string, c *domain.ContentItem) ([]byte, error) {
	if b == nil {
		return nil, errNoContentKey
	}
	plain, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return sealBytes(b.aead, plain, account)
}

func (b *contentBox) openContent(account string, sealed []byte) (*domain.ContentItem, error) {
	if b == nil {
		return nil, errNoContentKey
	}
	plain, ok := openBytes(b.aead, sealed, account)
	if !ok {
		return nil, errReviewUnsealed
	}
	var c domain.ContentItem
	if err := json.Unmarshal(plain, &c); err != nil {
		return nil, err
	}
	return &c, nil
}
