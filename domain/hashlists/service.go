// Package hashlists serves the hash lists of accounts
// (docs/operations.md#image-precheck-hash-lists): create, change and delete
// lists, add, import, disable, enable and confirm their hashes. The precheck
// matches content against them; operator-wide lists (made with the CLI) are
// visible to every account and read-only here.
package hashlists

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/contenteval/contenteval/domain"
)

// Limits of the API.
const (
	MaxListsPerAccount = 100
	MaxHashesPerList   = 1_000_000
	MaxHashesPerCall   = 10_000
	MaxBand            = 128
	MaxFloodLimit      = 1_000_000
)

// Service implements the hash-list operations.
type Service struct {
	store    domain.HashListStore
	clock    domain.Clock
	newID    func() string
	defaults domain.HashBands
	// changed runs after every change, so the precheck of this process
	// applies it at once (other processes poll).
	changed func(ctx context.Context)
}

// NewService returns the service; defaults are the bands of lists that set
// none, changed (may be nil) runs after every change.
func NewService(store domain.HashListStore, clock domain.Clock, newID func() string, defaults domain.HashBands, changed func(ctx context.Context)) *Service {
	if changed == nil {
		changed = func(context.Context) {}
	}
	return &Service{store: store, clock: clock, newID: newID, defaults: defaults, changed: changed}
}

// DefaultBands are the bands of lists that set none.
func (s *Service) DefaultBands() domain.HashBands { return s.defaults }

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// NewList is what creating a list takes.
type NewList struct {
	Name       string
	Kind       domain.HashKind
	Mode       domain.HashListMode
	Bands      *domain.HashBands
	FloodLimit int
}

// ValidateBands checks -1 <= exact <= high <= medium <= low <= MaxBand
// (exact -1: PDQ matches are never EXACT).
func ValidateBands(b domain.HashBands) error {
	if b.Exact < -1 || b.Exact > b.High || b.High < 0 || b.High > b.Medium || b.Medium > b.Low || b.Low > MaxBand {
		return fmt.Errorf("want -1 <= exact <= high <= medium <= low <= %d, got %d/%d/%d/%d", MaxBand, b.Exact, b.High, b.Medium, b.Low)
	}
	return nil
}

func checkMode(m domain.HashListMode) error {
	switch m {
	case domain.HashListEnforce, domain.HashListShadow, domain.HashListAllow:
		return nil
	}
	return domain.InvalidField("mode", "want HASH_LIST_MODE_ENFORCE, HASH_LIST_MODE_SHADOW or HASH_LIST_MODE_ALLOW")
}

// Create makes a list of the account. Codes: INVALID_ARGUMENT,
// ALREADY_EXISTS, RESOURCE_EXHAUSTED.
func (s *Service) Create(ctx context.Context, accountID string, in NewList) (*domain.HashList, error) {
	if !namePattern.MatchString(in.Name) {
		return nil, domain.InvalidField("name", "use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if hexDigits(in.Kind) == 0 {
		return nil, domain.InvalidField("kind", "want md5, sha1 or pdq")
	}
	if in.Mode == "" {
		in.Mode = domain.HashListEnforce
	}
	if err := checkMode(in.Mode); err != nil {
		return nil, err
	}
	if in.Bands != nil {
		if err := ValidateBands(*in.Bands); err != nil {
			return nil, domain.InvalidField("bands", err.Error())
		}
	}
	if in.FloodLimit == 0 {
		in.FloodLimit = domain.DefaultFloodLimit
	}
	if in.FloodLimit < 1 || in.FloodLimit > MaxFloodLimit {
		return nil, domain.InvalidField("floodLimit", fmt.Sprintf("want 1..%d", MaxFloodLimit))
	}
	now := s.clock.Now()
	l := &domain.HashList{ID: s.newID(), AccountID: accountID, Name: in.Name, Kind: in.Kind, Mode: in.Mode, Bands: in.Bands,
		FloodLimit: in.FloodLimit, Created: now, Updated: now}
	if err := s.store.CreateHashList(ctx, l, MaxListsPerAccount); err != nil {
		return nil, err
	}
	s.changed(ctx)
	return l, nil
}

// List returns the account's lists and the operator-wide ones.
func (s *Service) List(ctx context.Context, accountID string) ([]*domain.HashList, error) {
	return s.store.HashListsOf(ctx, accountID)
}

// OperatorList returns the operator-wide list named name (the CLI's way to
// name lists). Codes: NOT_FOUND.
func (s *Service) OperatorList(ctx context.Context, name string) (*domain.HashList, error) {
	ls, err := s.store.ListHashLists(ctx)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if l.Name == name {
			return l, nil
		}
	}
	return nil, domain.Errorf(domain.NotFound, "hash list %q not found", name)
}

// Get returns a list the account sees. Codes: NOT_FOUND.
func (s *Service) Get(ctx context.Context, accountID, id string) (*domain.HashList, error) {
	return s.store.GetHashList(ctx, accountID, id)
}

// own returns a list the account may change: NOT_FOUND for lists it does
// not see, PERMISSION_DENIED for operator-wide ones. The operator (account
// "", the CLI) owns the operator-wide lists.
func (s *Service) own(ctx context.Context, accountID, id string) (*domain.HashList, error) {
	l, err := s.store.GetHashList(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if l.AccountID != accountID {
		return nil, domain.Errorf(domain.PermissionDenied, "hash list %q is operator-wide: change it with the contenteval hashlists command", l.Name)
	}
	return l, nil
}

// Patch is a change of a list; nil fields stay.
type Patch struct {
	Name       *string
	Mode       *domain.HashListMode
	Bands      *domain.HashBands
	FloodLimit *int
}

// Update changes a list of the account. Codes: NOT_FOUND,
// PERMISSION_DENIED, INVALID_ARGUMENT, ALREADY_EXISTS.
func (s *Service) Update(ctx context.Context, accountID, id string, p Patch) (*domain.HashList, error) {
	l, err := s.own(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if p.Name != nil {
		if !namePattern.MatchString(*p.Name) {
			return nil, domain.InvalidField("name", "use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
		}
		l.Name = *p.Name
	}
	if p.Mode != nil {
		if err := checkMode(*p.Mode); err != nil {
			return nil, err
		}
		l.Mode = *p.Mode
	}
	if p.Bands != nil {
		if err := ValidateBands(*p.Bands); err != nil {
			return nil, domain.InvalidField("bands", err.Error())
		}
		b := *p.Bands
		l.Bands = &b
	}
	if p.FloodLimit != nil {
		if *p.FloodLimit < 1 || *p.FloodLimit > MaxFloodLimit {
			return nil, domain.InvalidField("floodLimit", fmt.Sprintf("want 1..%d", MaxFloodLimit))
		}
		l.FloodLimit = *p.FloodLimit
	}
	l.Updated = s.clock.Now()
	if err := s.store.UpdateHashList(ctx, l); err != nil {
		return nil, err
	}
	s.changed(ctx)
	return l, nil
}

// Delete removes a list of the account. Codes: NOT_FOUND, PERMISSION_DENIED.
func (s *Service) Delete(ctx context.Context, accountID, id string) error {
	if _, err := s.own(ctx, accountID, id); err != nil {
		return err
	}
	if err := s.store.DeleteHashListByID(ctx, accountID, id); err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// Add adds hashes to a list of the account, all or none, and returns the
// list after the change. Codes: INVALID_ARGUMENT naming hashes[i],
// NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED.
func (s *Service) Add(ctx context.Context, accountID, id string, hashes []NewHash) (*domain.HashList, int, error) {
	l, err := s.own(ctx, accountID, id)
	if err != nil {
		return nil, 0, err
	}
	if len(hashes) == 0 || len(hashes) > MaxHashesPerCall {
		return nil, 0, domain.InvalidField("hashes", fmt.Sprintf("give 1..%d hashes", MaxHashesPerCall))
	}
	entries := make([]domain.HashListEntry, len(hashes))
	for i, h := range hashes {
		norm, err := NormalizeHash(l.Kind, h.Hash)
		if err != nil {
			return nil, 0, domain.InvalidField(fmt.Sprintf("hashes[%d].hash", i), err.Error())
		}
		if err := checkProvenance(h.Source, h.Note); err != nil {
			return nil, 0, domain.InvalidField(fmt.Sprintf("hashes[%d]", i), err.Error())
		}
		entries[i] = domain.HashListEntry{Hex: norm, Quality: -1, Source: h.Source, Note: h.Note}
	}
	return s.store0(ctx, accountID, l, entries)
}

func (s *Service) store0(ctx context.Context, accountID string, l *domain.HashList, entries []domain.HashListEntry) (*domain.HashList, int, error) {
	if err := s.store.AddHashes(ctx, l.ID, entries, MaxHashesPerList); err != nil {
		return nil, 0, err
	}
	s.changed(ctx)
	after, err := s.store.GetHashList(ctx, accountID, l.ID)
	if err != nil {
		return nil, 0, err
	}
	return after, len(entries), nil
}

// ImportResult is what an import did: the list after it, the hashes added
// and the rows skipped because their signal type is not the list's kind.
type ImportResult struct {
	List           *domain.HashList
	Added, Skipped int
}

// Import adds the hashes of a file (FormatLines or FormatHMA) to a list of
// the account, all or none. Codes: INVALID_ARGUMENT naming the line in
// field "file", NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED.
func (s *Service) Import(ctx context.Context, accountID, id, format string, r io.Reader) (ImportResult, error) {
	l, err := s.own(ctx, accountID, id)
	if err != nil {
		return ImportResult{}, err
	}
	var entries []domain.HashListEntry
	add := func(h NewHash) error {
		entries = append(entries, domain.HashListEntry{Hex: h.Hash, Quality: -1, Source: h.Source, Note: h.Note})
		return nil
	}
	skipped := 0
	switch format {
	case "", FormatLines:
		err = ParseLines(r, l.Kind, add)
	case FormatHMA:
		skipped, err = ParseSignalCSV(r, l.Kind, add)
	default:
		return ImportResult{}, domain.InvalidField("format", "want HASH_LIST_IMPORT_FORMAT_LINES or HASH_LIST_IMPORT_FORMAT_HMA")
	}
	var le *LineError
	if errors.As(err, &le) {
		return ImportResult{}, domain.InvalidField("file", le.Error())
	}
	if err != nil {
		return ImportResult{}, err
	}
	if len(entries) == 0 {
		return ImportResult{}, domain.InvalidField("file", fmt.Sprintf("the file holds no hash of kind %s (%d rows of other signal types skipped)", l.Kind, skipped))
	}
	after, added, err := s.store0(ctx, accountID, l, entries)
	return ImportResult{List: after, Added: added, Skipped: skipped}, err
}

// Hashes returns a page of a list's hashes after the hash after ("" for the
// first page). Codes: NOT_FOUND, INVALID_ARGUMENT.
func (s *Service) Hashes(ctx context.Context, accountID, id, after string, limit int) ([]*domain.HashListEntry, error) {
	l, err := s.store.GetHashList(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	if after != "" {
		if after, err = NormalizeHash(l.Kind, after); err != nil {
			return nil, domain.InvalidField("pageToken", "not a page token of this list")
		}
	}
	return s.store.ListHashes(ctx, l.ID, after, limit)
}

// DeleteHash removes a hash from a list of the account. Codes: NOT_FOUND,
// PERMISSION_DENIED, INVALID_ARGUMENT.
func (s *Service) DeleteHash(ctx context.Context, accountID, id, hash string) error {
	l, err := s.own(ctx, accountID, id)
	if err != nil {
		return err
	}
	norm, err := NormalizeHash(l.Kind, hash)
	if err != nil {
		return domain.InvalidField("hash", err.Error())
	}
	if err := s.store.DeleteHash(ctx, l.ID, norm); err != nil {
		return err
	}
	s.changed(ctx)
	return nil
}

// Hash-state actions.
const (
	ActionDisable = "disable"
	ActionEnable  = "enable"
	ActionConfirm = "confirm"
)

// SetState disables, enables or confirms one hash of a list of the account.
// Enable turns a DISABLED hash ACTIVE (a QUARANTINED one needs confirm:
// FAILED_PRECONDITION); confirm turns any hash ACTIVE and restarts its flood
// count. Codes: NOT_FOUND, PERMISSION_DENIED, INVALID_ARGUMENT,
// FAILED_PRECONDITION.
func (s *Service) SetState(ctx context.Context, accountID, id, hash, action string) (*domain.HashListEntry, error) {
	e, err := s.setState(ctx, accountID, id, hash, action)
	if err != nil {
		return nil, err
	}
	s.changed(ctx)
	return e, nil
}

func (s *Service) setState(ctx context.Context, accountID, id, hash, action string) (*domain.HashListEntry, error) {
	l, err := s.own(ctx, accountID, id)
	if err != nil {
		return nil, err
	}
	norm, err := NormalizeHash(l.Kind, hash)
	if err != nil {
		return nil, domain.InvalidField("hash", err.Error())
	}
	switch action {
	case ActionDisable:
		return s.store.SetHashState(ctx, l.ID, norm, domain.HashDisabled, false)
	case ActionConfirm:
		return s.store.SetHashState(ctx, l.ID, norm, domain.HashActive, true)
	case ActionEnable:
		e, err := s.store.GetHash(ctx, l.ID, norm)
		if err != nil {
			return nil, err
		}
		if e.State == domain.HashQuarantined {
			return nil, domain.Errorf(domain.FailedPrecondition, "the hash is quarantined: confirm it to make it match again")
		}
		return s.store.SetHashState(ctx, l.ID, norm, domain.HashActive, false)
	}
	return nil, domain.Errorf(domain.InvalidArgument, "unknown action %q", action)
}
