package persistence_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
)

// uuidV7At returns a UUIDv7 made at t, as domain.NewID makes them now:
// history rows are partitioned by the time in their id.
func uuidV7At(t time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = 0x70 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// memBlobs is a BlobStore in memory; beforePut, when set, runs before a
// Put stores its bytes (a concurrent change of the database).
type memBlobs struct {
	mu        sync.Mutex
	files     map[string][]byte
	beforePut func()
}

func (m *memBlobs) Put(_ context.Context, key string, r io.Reader) (int64, error) {
	if m.beforePut != nil {
		m.beforePut()
	}
	b, err := io.ReadAll(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string][]byte{}
	}
	m.files[key] = b
	return int64(len(b)), err
}

func (m *memBlobs) Open(_ context.Context, key string) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[key]
	if !ok {
		return nil, domain.Errorf(domain.NotFound, "no blob %q", key)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memBlobs) Stat(_ context.Context, key string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[key]
	if !ok {
		return 0, domain.Errorf(domain.NotFound, "no blob %q", key)
	}
	return int64(len(b)), nil
}

func (m *memBlobs) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, key)
	return nil
}

func (m *memBlobs) PresignURL(context.Context, string, string, time.Time) (string, bool, error) {
	return "", false, nil
}

func (m *memBlobs) has(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.files[key]
	return ok
}

// historyFixture writes history rows of every kind for retention tests.
type historyFixture struct {
	db   *persistence.DB
	jobs *persistence.Jobs
}

// finishedJob stores a completed job of account created at created, with
// one result, one hit, one feedback annotation and one shadow evaluation
// (and result), and, when webhook, its completion event delivered at
// created. It returns the job id.
func (f *historyFixture) finishedJob(t *testing.T, account string, created time.Time, webhook bool) string {
	t.Helper()
	ctx := t.Context()
	id := uuidV7At(created)
	j := &domain.Job{ID: id, AccountID: account, Type: domain.JobTypeStandard, Status: domain.JobCompleted,
		Threshold: 0.5, Created: created, Updated: created, Completed: &created}
	if webhook {
		j.Webhook = &domain.Webhook{URL: "https://example.com/hook"}
	}
	rid := uuidV7At(created)
	results := []*domain.JobResult{{ID: rid, Index: 0, ContentHash: "sha256::00", Created: created}}
	hits := []*domain.LabelHit{{JobID: id, JobResultID: rid, Seq: 0, Label: "A", Modality: domain.ModalityText, Score: 1}}
	require.NoError(t, f.jobs.CreateFinishedJob(ctx, j, results, hits))
	require.NoError(t, persistence.NewFeedback(f.db).UpsertFeedback(ctx, &domain.FeedbackAnnotation{
		ID: uuidV7At(created), AccountID: account, JobID: id, JobResultID: rid, ContentHash: "sha256::00", Label: "A",
		Expected: domain.EvaluationResultTrue, Actual: domain.EvaluationResultTrue, Created: created, Updated: created,
	}))
	_, err := f.db.ExecContext(ctx, f.db.Rebind(`
		INSERT INTO shadow_evaluations (shadow_version_id, job_result_id, account_id, policy_id, active_version_id,
			job_id, job_created, content_hash, disagrees, created)
		VALUES ('sv', ?, ?, 'p', 'av', ?, ?, 'sha256::00', ?, ?)`), rid, account, id, created, true, created)
	require.NoError(t, err)
	_, err = f.db.ExecContext(ctx, f.db.Rebind(`
		INSERT INTO shadow_results (shadow_version_id, job_result_id, label, active_outcome, shadow_outcome, disagrees, job_id)
		VALUES ('sv', ?, 'A', 'TRUE', 'FALSE', ?, ?)`), rid, true, id)
	require.NoError(t, err)
	if webhook {
		_, err = f.db.ExecContext(ctx, f.db.Rebind(`UPDATE webhook_events SET delivered_at = ? WHERE subject_id = ?`), created, id)
		require.NoError(t, err)
	}
	return id
}

// openJob stores a job of account in status (pending or running).
func (f *historyFixture) openJob(t *testing.T, account string, created time.Time, status domain.JobStatus) string {
	t.Helper()
	id := uuidV7At(created)
	j := &domain.Job{ID: id, AccountID: account, Type: domain.JobTypeStandard, Status: status, Threshold: 0.5,
		Created: created, Updated: created}
	if status == domain.JobRunning {
		until := created.Add(time.Hour)
		j.LeaseOwner, j.LeaseExpiresAt = "w", &until
	}
	require.NoError(t, f.jobs.CreateJob(t.Context(), j))
	return id
}

// webhookEvent stores an event of account created at created, delivered
// then when delivered.
func (f *historyFixture) webhookEvent(t *testing.T, account string, created time.Time, delivered bool) string {
	t.Helper()
	id := "msg_" + uuidV7At(created)
	var at *time.Time
	if delivered {
		at = &created
	}
	_, err := f.db.ExecContext(t.Context(), f.db.Rebind(`
		INSERT INTO webhook_events (id, account_id, url, type, subject_kind, subject_id, next_attempt_at, created, delivered_at)
		VALUES (?, ?, 'https://example.com/hook', 'job.completed', 'job', 'x', ?, ?, ?)`), id, account, created, created, at)
	require.NoError(t, err)
	return id
}

// batch stores a batch of account in state with an input and an output
// blob and one item.
func (f *historyFixture) batch(t *testing.T, blobs *memBlobs, account string, created time.Time, state domain.BatchState) string {
	t.Helper()
	ctx := t.Context()
	id := uuidV7At(created)
	b := &domain.BatchJob{ID: id, AccountID: account, PolicyID: "p", State: domain.BatchQueued, Created: created, Updated: created}
	require.NoError(t, persistence.NewBatchJobs(f.db).CreateBatch(ctx, b))
	in, out := "batches/"+id+"/input.jsonl", "batches/"+id+"/output.jsonl"
	for _, k := range []string{in, out} {
		_, err := blobs.Put(ctx, k, bytes.NewReader([]byte("{}")))
		require.NoError(t, err)
	}
	_, err := f.db.ExecContext(ctx, f.db.Rebind(`UPDATE batch_jobs SET state = ?, input_key = ?, output_key = ? WHERE id = ?`),
		string(state), in, out, id)
	require.NoError(t, err)
	_, err = f.db.ExecContext(ctx, f.db.Rebind(`
		INSERT INTO batch_items (batch_id, seq, ref_id, job_id, status) VALUES (?, 0, 'r0', 'j', 'submitted')`), id)
	require.NoError(t, err)
	return id
}

// count returns how many rows of table have col = v.
// precheckMatch stores a hash-list match audit record of the account
// created at created and returns its id.
func (f *historyFixture) precheckMatch(t *testing.T, account string, created time.Time) string {
	t.Helper()
	id := uuidV7At(created)
	require.NoError(t, persistence.NewHashLists(f.db).RecordMatch(t.Context(), &domain.PrecheckMatch{ID: id, AccountID: account,
		List: "bank", Kind: domain.HashPDQ, Confidence: domain.MatchConfidenceHigh, Created: created}))
	return id
}

func (f *historyFixture) count(t *testing.T, table, col, v string) int {
	t.Helper()
	var n int
	require.NoError(t, f.db.GetContext(t.Context(), &n, f.db.Rebind(`SELECT COUNT(*) FROM `+table+` WHERE `+col+` = ?`), v))
	return n
}
