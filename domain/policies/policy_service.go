package policies

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/evaluation"
	"github.com/contenteval/contenteval/domain/paging"
	"github.com/contenteval/contenteval/domain/rules"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Config are the limits of the policy service.
type Config struct {
	// MaxTextBytes bounds a policy version's rule text (docs/api.md#limits: 64 KiB).
	MaxTextBytes int
	// ActiveTTL is how long a policy read for a job (its active version,
	// whether it is disabled) is reused before it is read again; 0 reads it
	// for every job. Changes made through this service apply at once; it
	// bounds how late a change made by another replica applies.
	ActiveTTL time.Duration
}

// versionCacheSize bounds the versions kept in memory.
const versionCacheSize = 4096

// Service creates, reads and versions policies and compiles them into
// evaluation plans (cached per version: versions are immutable).
type Service struct {
	store  domain.PolicyStore
	clock  domain.Clock
	tokens *paging.Tokens
	cfg    Config
	plans  *evaluation.Plans

	// versions caches versions by id: they are immutable, and every job
	// reads its policy's active version.
	versions *lru.Cache[string, *domain.PolicyVersion]
	// active caches policies read for jobs for cfg.ActiveTTL.
	active *activeCache
	// keys maps (account, policyKey) to the policy's id: a key never
	// changes and a policy is never deleted, so the mapping holds for good.
	keys *lru.Cache[activeKey, string]
}

// NewService returns the policy service; plans is the server's cache of
// compiled plans (nil: one of the service's own).
func NewService(store domain.PolicyStore, clock domain.Clock, tokens *paging.Tokens, cfg Config, plans *evaluation.Plans) *Service {
	if cfg.MaxTextBytes <= 0 {
		cfg.MaxTextBytes = 64 << 10
	}
	if plans == nil {
		plans = evaluation.NewPlans(1024)
	}
	versions, err := lru.New[string, *domain.PolicyVersion](versionCacheSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	keys, err := lru.New[activeKey, string](activePolicyCacheSize)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &Service{store: store, clock: clock, tokens: tokens, cfg: cfg, plans: plans,
		versions: versions, active: newActiveCache(cfg.ActiveTTL, clock), keys: keys}
}

var policyKeyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// compile checks text and returns the version fields it determines. Codes:
// INVALID_ARGUMENT with a CompilationErrors detail.
func (s *Service) compile(text string) (*rules.Plan, error) {
	if len(text) > s.cfg.MaxTextBytes {
		return nil, domain.InvalidField("text", "is longer than the limit of "+strconv.Itoa(s.cfg.MaxTextBytes)+" bytes")
	}
	plan, err := rules.Compile(text, rules.CompileOptions{Limits: rules.Limits{MaxTextBytes: s.cfg.MaxTextBytes}})
	if err != nil {
		var ce *rules.CompileErrors
		if errors.As(err, &ce) {
			out := domain.CompilationErrors{}
			for _, e := range ce.Errors {
				out.Errors = append(out.Errors, domain.CompilationError{Message: e.Message, Line: e.Line, Column: e.Column})
			}
			msg := "the policy text does not compile"
			if len(out.Errors) > 0 {
				msg += ": line " + strconv.Itoa(out.Errors[0].Line) + ", column " + strconv.Itoa(out.Errors[0].Column) + ": " + out.Errors[0].Message
			}
			return nil, &domain.Error{Code: domain.InvalidArgument, Message: msg, Details: []domain.Detail{out}}
		}
		return nil, err
	}
	return plan, nil
}

func newVersion(policyID, text string, plan *rules.Plan, now time.Time) *domain.PolicyVersion {
	st := plan.Stats()
	return &domain.PolicyVersion{
		ID: domain.NewID(), PolicyID: policyID, Text: text, TokenCounts: st.TokenCounts,
		ComplexityScore: st.ComplexityScore, Created: now,
	}
}

// Create makes a policy and its first version, which is active. Codes:
// INVALID_ARGUMENT (bad key, compile errors), ALREADY_EXISTS.
func (s *Service) Create(ctx context.Context, account *domain.Account, key, text string) (*domain.Policy, *domain.PolicyVersion, error) {
	if !policyKeyPattern.MatchString(key) || len(key) > 128 {
		return nil, nil, domain.InvalidField("policyKey", "must be 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	plan, err := s.compile(text)
	if err != nil {
		return nil, nil, err
	}
	now := s.clock.Now()
	p := &domain.Policy{ID: domain.NewID(), AccountID: account.ID, Key: key, Created: now, Updated: now}
	v := newVersion(p.ID, text, plan, now)
	v.Seq, v.Mode = 1, domain.PolicyVersionActive
	p.ActiveVersionID = v.ID
	if err := s.store.CreatePolicy(ctx, p, v); err != nil {
		return nil, nil, err
	}
	return p, v, nil
}

// Get returns a policy of the account. Codes: NOT_FOUND.
func (s *Service) Get(ctx context.Context, account *domain.Account, id string) (*domain.Policy, error) {
	return s.store.GetPolicy(ctx, account.ID, id)
}

// GetByKey returns the account's policy with that policyKey, as the jobs
// read it (the active cache): the moderation endpoint resolves its model
// this way on every call. Codes: NOT_FOUND.
func (s *Service) GetByKey(ctx context.Context, account *domain.Account, key string) (*domain.Policy, error) {
	k := activeKey{account: account.ID, policy: key}
	if id, ok := s.keys.Get(k); ok {
		return s.activePolicy(ctx, account.ID, id)
	}
	p, err := s.store.GetPolicyByKey(ctx, account.ID, key)
	if err != nil {
		return nil, err
	}
	s.keys.Add(k, p.ID)
	return p, nil
}

// List returns a page of the account's policies, newest first, and the token
// of the next page ("" when there is none). Codes: INVALID_ARGUMENT (page
// token or size).
func (s *Service) List(ctx context.Context, account *domain.Account, pageSize *int32, pageToken string) ([]*domain.Policy, string, error) {
	q := paging.Query{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: 100, Max: 1000, Scope: "policies|" + account.ID}
	return paging.Keyset(s.tokens, q, nil, func(after *domain.PolicyCursor, limit int) ([]*domain.Policy, error) {
		return s.store.ListPolicies(ctx, account.ID, after, limit)
	}, func(p *domain.Policy) domain.PolicyCursor { return domain.PolicyCursor{Created: p.Created, ID: p.ID} })
}

// AddVersion compiles text into a new version of the policy and makes it
// active. Codes: NOT_FOUND, INVALID_ARGUMENT (compile errors).
func (s *Service) AddVersion(ctx context.Context, account *domain.Account, policyID, text string) (*domain.PolicyVersion, error) {
	return s.AddVersionAs(ctx, account, policyID, text, "", nil)
}

// ListVersions returns a page of a policy's versions, oldest first. Codes:
// NOT_FOUND, INVALID_ARGUMENT (page token or size).
func (s *Service) ListVersions(ctx context.Context, account *domain.Account, policyID string, pageSize *int32, pageToken string) ([]*domain.PolicyVersion, string, error) {
	q := paging.Query{SizeField: "pageSize", TokenField: "pageToken", Size: pageSize, Token: pageToken,
		Default: 100, Max: 1000, Scope: "policyVersions|" + account.ID + "|" + policyID}
	var p *domain.Policy
	check := func() error {
		var err error
		p, err = s.store.GetPolicy(ctx, account.ID, policyID)
		return err
	}
	vs, next, err := paging.Keyset(s.tokens, q, check, func(after *policyVersionCursor, limit int) ([]*domain.PolicyVersion, error) {
		seq := 0
		if after != nil {
			seq = after.Seq
		}
		return s.store.ListPolicyVersions(ctx, policyID, seq, limit)
	}, func(v *domain.PolicyVersion) policyVersionCursor { return policyVersionCursor{Seq: v.Seq} })
	for _, v := range vs {
		withMode(p, v)
	}
	return vs, next, err
}

// policyVersionCursor is the position in a policy's versions.
type policyVersionCursor struct {
	Seq int `json:"s"`
}

// SetDisabled enables or disables a policy; jobs against a disabled policy
// are refused with FAILED_PRECONDITION. Codes: NOT_FOUND.
func (s *Service) SetDisabled(ctx context.Context, accountID, id string, disabled bool) (*domain.Policy, error) {
	p, err := s.store.SetPolicyDisabled(ctx, accountID, id, disabled, s.clock.Now())
	s.forget(accountID, id)
	return p, err
}

// forget drops a policy from the active cache after a change to it.
func (s *Service) forget(accountID, policyID string) {
	s.active.forget(accountID, policyID)
}

// activePolicy returns the policy, from the active cache when it was read
// less than cfg.ActiveTTL ago. Codes: NOT_FOUND.
func (s *Service) activePolicy(ctx context.Context, accountID, policyID string) (*domain.Policy, error) {
	return s.active.get(ctx, accountID, policyID, s.store.GetPolicy)
}

// ActivePlan returns the policy's active version and its compiled plan.
// Codes: NOT_FOUND, FAILED_PRECONDITION (disabled policy).
func (s *Service) ActivePlan(ctx context.Context, accountID, policyID string) (*domain.Policy, *domain.PolicyVersion, *rules.Plan, error) {
	p, err := s.activePolicy(ctx, accountID, policyID)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.Disabled {
		return nil, nil, nil, domain.Errorf(domain.FailedPrecondition, "policy %q is disabled", policyID)
	}
	v, plan, err := s.Plan(ctx, p.ID, p.ActiveVersionID)
	if err != nil {
		return nil, nil, nil, err
	}
	return p, v, plan, nil
}

// Plan returns a version and its compiled plan (cached per version id).
func (s *Service) Plan(ctx context.Context, policyID, versionID string) (*domain.PolicyVersion, *rules.Plan, error) {
	v, err := s.version(ctx, policyID, versionID)
	if err != nil {
		return nil, nil, err
	}
	plan, err := s.plans.Policy(v, s.cfg.MaxTextBytes)
	if err != nil {
		return nil, nil, err
	}
	return v, plan, nil
}

// version returns one version, from memory when it has been read before.
func (s *Service) version(ctx context.Context, policyID, versionID string) (*domain.PolicyVersion, error) {
	if v, ok := s.versions.Get(versionID); ok && v.PolicyID == policyID {
		return v, nil
	}
	v, err := s.store.GetPolicyVersion(ctx, policyID, versionID)
	if err != nil {
		return nil, err
	}
	s.versions.Add(versionID, v)
	return v, nil
}
