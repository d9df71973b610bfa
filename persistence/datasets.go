package persistence

// Dataset examples of labels (docs/api.md#extension-endpoints). The runs over them are in
// dataset_runs.go.

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/contenteval/contenteval/domain"
)

// Datasets implements domain.DatasetStore.
type Datasets struct {
	db *DB
}

var _ domain.DatasetStore = (*Datasets)(nil)

// NewDatasets returns the dataset store on db.
func NewDatasets(db *DB) *Datasets { return &Datasets{db: db} }

type exampleRow struct {
	ID          string    `db:"id"`
	AccountID   string    `db:"account_id"`
	LabelID     string    `db:"label_id"`
	Kind        string    `db:"kind"`
	Text        string    `db:"text"`
	Bytes       []byte    `db:"bytes"`
	Metadata    string    `db:"metadata"`
	ContentHash string    `db:"content_hash"`
	Expected    string    `db:"expected_outcome"`
	Note        string    `db:"note"`
	Created     time.Time `db:"created"`
}

const exampleColumns = `id, account_id, label_id, kind, text, bytes, metadata, content_hash, expected_outcome, note, created`

var exampleInsertColumns = strings.Fields(strings.ReplaceAll(exampleColumns, ",", ""))

func (r *exampleRow) toDomain() (*domain.DatasetExample, error) {
	e := &domain.DatasetExample{
		ID: r.ID, AccountID: r.AccountID, LabelID: r.LabelID, ContentHash: r.ContentHash,
		Expected: domain.EvaluationResult(r.Expected), Note: r.Note, Created: r.Created.UTC(),
		Content: domain.ContentItem{Kind: domain.ContentKind(r.Kind), Text: r.Text, Bytes: r.Bytes},
	}
	if err := unmarshalJSON(r.Metadata, &e.Content.Metadata); err != nil {
		return nil, err
	}
	return e, nil
}

// lockLabel checks, in tx, that the account's label exists and is not
// deleted, and on PostgreSQL locks its row: writes that count a label's
// examples or runs before adding to them are serialized per label. Codes:
// NOT_FOUND.
func (s *Datasets) lockLabel(ctx context.Context, tx *sqlx.Tx, accountID, labelID string) error {
	var id string
	err := tx.GetContext(ctx, &id, tx.Rebind(`SELECT id FROM labels WHERE id = ? AND account_id = ? AND deleted_at IS NULL`+s.db.forUpdate()), labelID, accountID)
	return describe(TranslateError(err), domain.NotFound, "label %q not found", labelID)
}

// CreateExamples inserts examples of the account's label, all or none.
// Codes: NOT_FOUND (label), INVALID_ARGUMENT (the label would hold more
// than maxPerLabel examples); UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) CreateExamples(ctx context.Context, accountID, labelID string, examples []*domain.DatasetExample, maxPerLabel int) error {
	in := rowsInsert{table: "dataset_examples", columns: exampleInsertColumns, rows: make([][]any, 0, len(examples))}
	for _, e := range examples {
		e.Created = StoredTime(e.Created)
		meta, err := marshalJSON(e.Content.Metadata)
		if err != nil {
			return err
		}
		var b []byte
		if e.Content.Kind != domain.ContentText {
			b = e.Content.Bytes
		}
		in.rows = append(in.rows, []any{e.ID, accountID, labelID, string(e.Content.Kind), e.Content.Text, b, meta,
			e.ContentHash, string(e.Expected), e.Note, e.Created})
	}
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		if err := s.lockLabel(ctx, tx, accountID, labelID); err != nil {
			return err
		}
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM dataset_examples WHERE label_id = ?`), labelID); err != nil {
			return err
		}
		if n+len(examples) > maxPerLabel {
			return domain.InvalidField("examples", "the label has "+strconv.Itoa(n)+" examples; "+strconv.Itoa(len(examples))+
				" more would exceed the limit of "+strconv.Itoa(maxPerLabel)+" per label")
		}
		return execInserts(ctx, tx, []rowsInsert{in})
	})
}

// exampleSize is the size of an example's content, as counted against a
// page's byte budget: characters of text (bytes on SQLite BLOBs and
// PostgreSQL bytea).
const exampleSize = `LENGTH(e.text) + COALESCE(LENGTH(e.bytes), 0)`

// withinBudget returns how many of sizes (in order) fit in limit and in
// maxBytes in total; at least one, so that any example can be read.
func withinBudget(sizes []int64, limit, maxBytes int) int {
	total := int64(0)
	for i, n := range sizes {
		if i == limit || (i > 0 && total+n > int64(maxBytes)) {
			return i
		}
		total += n
	}
	return len(sizes)
}

// ListExamples returns up to limit examples of the account's label after
// afterID, in id order, and whether more follow. It stops early rather
// than read more than maxBytes of content (an image example may be 20 MiB):
// the sizes are read first, the content of the examples that fit after.
// Codes: UNAVAILABLE, CANCELED, DEADLINE_EXCEEDED.
func (s *Datasets) ListExamples(ctx context.Context, accountID, labelID, afterID string, limit, maxBytes int) ([]*domain.DatasetExample, bool, error) {
	var sizes []struct {
		ID   string `db:"id"`
		Size int64  `db:"size"`
	}
	err := s.db.SelectContext(ctx, &sizes, s.db.Rebind(`SELECT e.id, `+exampleSize+` AS size FROM dataset_examples e
		WHERE e.label_id = ? AND e.account_id = ? AND e.id > ? ORDER BY e.id LIMIT ?`), labelID, accountID, afterID, limit+1)
	if err != nil || len(sizes) == 0 {
		return nil, false, TranslateError(err)
	}
	ns := make([]int64, len(sizes))
	for i, sz := range sizes {
		ns[i] = sz.Size
	}
	n := withinBudget(ns, limit, maxBytes)
	var rows []exampleRow
	err = s.db.SelectContext(ctx, &rows, s.db.Rebind(`SELECT `+exampleColumns+` FROM dataset_examples
		WHERE label_id = ? AND account_id = ? AND id > ? AND id <= ? ORDER BY id`), labelID, accountID, afterID, sizes[n-1].ID)
	if err != nil {
		return nil, false, TranslateError(err)
	}
	out := make([]*domain.DatasetExample, len(rows))
	for i := range rows {
		if out[i], err = rows[i].toDomain(); err != nil {
			return nil, false, err
		}
	}
	return out, len(sizes) > n, nil
}

// DeleteExample deletes one example of the account's label. Runs keep
// their results of it. Codes: NOT_FOUND; UNAVAILABLE, CANCELED,
// DEADLINE_EXCEEDED.
func (s *Datasets) DeleteExample(ctx context.Context, accountID, labelID, id string) error {
	return s.db.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, tx.Rebind(`DELETE FROM dataset_examples WHERE id = ? AND label_id = ? AND account_id = ?`), id, labelID, accountID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return domain.Errorf(domain.NotFound, "example %q not found", id)
		}
		return nil
	})
}

// internalJobTypesExcluded is the condition of GetJob and ListJobs that
// leaves out the internal job types (domain.InternalJobTypes): the job
// endpoints show the clients' jobs only, and the store decides it once for
// every caller.
var internalJobTypesExcluded = func() string {
	quoted := make([]string, len(domain.InternalJobTypes))
	for i, t := range domain.InternalJobTypes {
		quoted[i] = "'" + string(t) + "'"
	}
	return "job_type NOT IN (" + strings.Join(quoted, ", ") + ")"
}()
