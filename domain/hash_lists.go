package domain

import (
	"context"
	"time"
)

// HashKind is the kind of hash a hash list holds.
type HashKind string

// Hash-list kinds (`contenteval hashlists import --kind`).
const (
	HashMD5  HashKind = "md5"
	HashSHA1 HashKind = "sha1"
	HashPDQ  HashKind = "pdq"
)

// HashList is one list of known abusive images' hashes an operator
// imported for the precheck (DESIGN §7).
type HashList struct {
	ID      string
	Name    string
	Kind    HashKind
	Count   int64
	Created time.Time
}

// HashListEntry is one hash of a list: lowercase hex, and a PDQ quality (-1 when
// the list gives none).
type HashListEntry struct {
	Hex     string
	Quality int
}

// PrecheckMatch is one audit record of the precheck: who sent what matched which list, never the
// content itself.
type PrecheckMatch struct {
	ID         string
	AccountID  string
	JobID      string
	List       string
	Kind       HashKind
	Confidence PrecheckMatchConfidence
	Distance   int
	Created    time.Time
}

// HashListStore persists hash lists and the precheck's audit trail.
type HashListStore interface {
	// ImportHashList creates list l, or replaces the entries of the list of the
	// same name, with the entries entries yields, in one transaction: readers
	// see the old list or the new one, never a half import.
	ImportHashList(ctx context.Context, l *HashList, entries func(yield func(HashListEntry) error) error) error
	// ListHashLists returns every list by name.
	ListHashLists(ctx context.Context) ([]*HashList, error)
	// DeleteHashList removes a list and its entries. Codes: NOT_FOUND.
	DeleteHashList(ctx context.Context, name string) error
	// HashListsGeneration changes whenever any list is imported or deleted.
	HashListsGeneration(ctx context.Context) (int64, error)
	// EachHashEntry calls fn for every entry of every list.
	EachHashEntry(ctx context.Context, fn func(list string, kind HashKind, e HashListEntry) error) error
	// RecordMatch writes an audit record.
	RecordMatch(ctx context.Context, m *PrecheckMatch) error
	// ListMatches returns the audit records of an account, newest first.
	ListMatches(ctx context.Context, accountID string, limit int) ([]*PrecheckMatch, error)
}
