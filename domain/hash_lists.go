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

// HashListMode says what a match of a list does (docs/operations.md#image-precheck-hash-lists).
type HashListMode string

// Hash-list modes (the API's HashListMode).
const (
	// HashListEnforce rejects the content.
	HashListEnforce HashListMode = "HASH_LIST_MODE_ENFORCE"
	// HashListShadow records the match and lets the content through.
	HashListShadow HashListMode = "HASH_LIST_MODE_SHADOW"
	// HashListAllow is a negative list: its match wins over every other
	// match of the same content.
	HashListAllow HashListMode = "HASH_LIST_MODE_ALLOW"
)

// HashState is the state of one hash of a list.
type HashState string

// Hash states (the API's HashState).
const (
	HashActive      HashState = "HASH_STATE_ACTIVE"
	HashDisabled    HashState = "HASH_STATE_DISABLED"
	HashQuarantined HashState = "HASH_STATE_QUARANTINED"
)

// HashBands are a list's PDQ distance limits of the EXACT, HIGH, MEDIUM and
// LOW match confidences.
type HashBands struct {
	Exact, High, Medium, Low int
}

// DefaultFloodLimit is the number of distinct contents one hash may match in
// an hour before it is quarantined, for lists that set none.
const DefaultFloodLimit = 200

// HashList is one list of hashes the precheck matches content against
// (docs/operations.md#image-precheck-hash-lists). AccountID is empty for the
// operator-wide lists the CLI makes, which apply to every account.
type HashList struct {
	ID        string
	AccountID string
	Name      string
	Kind      HashKind
	Mode      HashListMode
	// Bands is nil when the list follows the server's --pdq-bands.
	Bands      *HashBands
	FloodLimit int
	Count      int64
	Created    time.Time
	Updated    time.Time
}

// HashListEntry is one hash of a list: lowercase hex, and a PDQ quality (-1 when
// the list gives none).
type HashListEntry struct {
	Hex         string
	Quality     int
	Source      string
	Note        string
	State       HashState
	MatchCount  int64
	LastMatched time.Time
	Created     time.Time
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

// HashHit is one match of a list's hash by one content, as the precheck
// records it (match counts and the flood quarantine).
type HashHit struct {
	ListID      string
	Hash        string
	ContentHash string
	At          time.Time
}

// HashHitOutcome is the state of a hash after RecordHit counted a hit.
type HashHitOutcome struct {
	// State is the hash's state after the hit (QUARANTINED when this hit
	// was one too many).
	State HashState
	// Quarantined is true when this hit quarantined the hash.
	Quarantined bool
	// Source and Note are the hash's provenance.
	Source, Note string
	// Found is false when the hash was removed since the index was built.
	Found bool
}

// HashListStore persists hash lists and the precheck's audit trail.
type HashListStore interface {
	// ImportHashList creates the operator-wide list l, or replaces the
	// entries of the operator-wide list of the same name, with the entries
	// entries yields, in one transaction: readers see the old list or the
	// new one, never a half import.
	ImportHashList(ctx context.Context, l *HashList, entries func(yield func(HashListEntry) error) error) error
	// ListHashLists returns every operator-wide list by name.
	ListHashLists(ctx context.Context) ([]*HashList, error)
	// DeleteHashList removes an operator-wide list and its entries. Codes: NOT_FOUND.
	DeleteHashList(ctx context.Context, name string) error
	// HashListsGeneration changes whenever any list, hash or hash state
	// changes.
	HashListsGeneration(ctx context.Context) (int64, error)
	// AllHashLists returns every list of every account.
	AllHashLists(ctx context.Context) ([]*HashList, error)
	// EachHashEntry calls fn for every entry of every list, with its list id.
	EachHashEntry(ctx context.Context, fn func(listID string, kind HashKind, e HashListEntry) error) error
	// RecordMatch writes an audit record.
	RecordMatch(ctx context.Context, m *PrecheckMatch) error
	// ListMatches returns the audit records of an account, newest first.
	ListMatches(ctx context.Context, accountID string, limit int) ([]*PrecheckMatch, error)

	// CreateHashList creates a list. Codes: ALREADY_EXISTS (the name is
	// taken in the account), RESOURCE_EXHAUSTED (maxLists per account).
	CreateHashList(ctx context.Context, l *HashList, maxLists int) error
	// HashListsOf returns the lists of an account and the operator-wide
	// lists, by name.
	HashListsOf(ctx context.Context, accountID string) ([]*HashList, error)
	// GetHashList returns a list of the account or an operator-wide one.
	// Codes: NOT_FOUND.
	GetHashList(ctx context.Context, accountID, id string) (*HashList, error)
	// UpdateHashList stores l's name, mode, bands and flood limit. Codes:
	// NOT_FOUND, ALREADY_EXISTS.
	UpdateHashList(ctx context.Context, l *HashList) error
	// DeleteHashListByID removes a list of the account. Codes: NOT_FOUND.
	DeleteHashListByID(ctx context.Context, accountID, id string) error
	// AddHashes adds entries to a list in one transaction; an entry already
	// there keeps its state and counts and takes the new source and note.
	// Codes: RESOURCE_EXHAUSTED when the list would pass maxCount.
	AddHashes(ctx context.Context, listID string, entries []HashListEntry, maxCount int64) error
	// ListHashes returns up to limit entries of a list after hash after, by
	// hash.
	ListHashes(ctx context.Context, listID, after string, limit int) ([]*HashListEntry, error)
	// GetHash returns one hash of a list. Codes: NOT_FOUND.
	GetHash(ctx context.Context, listID, hash string) (*HashListEntry, error)
	// DeleteHash removes a hash from a list. Codes: NOT_FOUND.
	DeleteHash(ctx context.Context, listID, hash string) error
	// SetHashState changes a hash's state; confirming (state ACTIVE with
	// resetFlood) also forgets its recent hits. Codes: NOT_FOUND.
	SetHashState(ctx context.Context, listID, hash string, state HashState, resetFlood bool) (*HashListEntry, error)
	// RecordHit counts a hit of a hash: its match count, and, for lists
	// with flood >= 0, the distinct contents it matched since hit.At minus
	// an hour; an ACTIVE hash over flood becomes QUARANTINED.
	RecordHit(ctx context.Context, hit HashHit, flood int) (HashHitOutcome, error)
}
