package domain

import (
	"context"
	"time"
)

// AccountType decides which endpoints an account may call (docs/api.md#authentication-and-accounts).
type AccountType string

// Account types. New accounts are label-first unless created otherwise.
const (
	AccountLabelFirst  AccountType = "label-first"
	AccountPolicyFirst AccountType = "policy-first"
)

// Valid reports whether t is a known account type.
func (t AccountType) Valid() bool { return t == AccountLabelFirst || t == AccountPolicyFirst }

// KeyRole decides which operations a key may call
// (docs/api.md#key-roles).
type KeyRole string

// Key roles. Keys issued before roles existed carry none and act as admin.
const (
	// RoleAdmin may call everything.
	RoleAdmin KeyRole = "admin"
	// RoleAPI may evaluate and read, but not change an account's
	// configuration.
	RoleAPI KeyRole = "api"
	// RoleReviewer may call the review endpoints only.
	RoleReviewer KeyRole = "reviewer"
)

// KeyRoles lists every role, in the order the CLI and docs show them.
var KeyRoles = []KeyRole{RoleAdmin, RoleAPI, RoleReviewer}

// Valid reports whether r is a known role.
func (r KeyRole) Valid() bool { return r == RoleAdmin || r == RoleAPI || r == RoleReviewer }

// Limits are an account's rate and quota settings. Zero means "use the server
// default".
type Limits struct {
	RequestsPerSecond float64
	Burst             int
	EvaluationsPerDay int64
}

// Account owns every other row of the service.
type Account struct {
	ID            string
	Name          string
	Type          AccountType
	Limits        Limits
	WebhookSecret string
	// Retention is how long the account's evaluation history is kept when
	// that is shorter than the server's retention; 0 for the server's.
	Retention time.Duration
	// Moderation is what the OpenAI-compatible moderation endpoint
	// evaluates for OpenAI's own model names (docs/api.md#openai-compatible-moderation).
	Moderation ModerationDefaults
	Created    time.Time
	Updated    time.Time
}

// ModerationDefaults name an account's default moderation target: a policy
// key (policy-first accounts) or a label tag name (label-first ones); ""
// when none is set.
type ModerationDefaults struct {
	PolicyKey string
	Tag       string
}

// APIKey is the record behind a JWT: its id is the token's jti. The token
// itself is never stored.
type APIKey struct {
	ID        string
	AccountID string
	Name      string
	Role      KeyRole
	Created   time.Time
	ExpiresAt *time.Time
	RevokedAt *time.Time
}

// AccountStore persists accounts.
type AccountStore interface {
	// CreateAccount inserts a. Codes: ALREADY_EXISTS when the id is taken.
	CreateAccount(ctx context.Context, a *Account) error
	// GetAccount returns one account. Codes: NOT_FOUND.
	GetAccount(ctx context.Context, id string) (*Account, error)
	// ListAccounts returns every account, oldest first.
	ListAccounts(ctx context.Context) ([]*Account, error)
	// UpdateAccount loads the account, applies fn and saves the result in one
	// transaction. Codes: NOT_FOUND, or whatever fn returns.
	UpdateAccount(ctx context.Context, id string, fn func(*Account) error) (*Account, error)
	// CountAccounts returns how many accounts exist (first-run bootstrap).
	CountAccounts(ctx context.Context) (int, error)
}

// KeyStore persists API key records.
type KeyStore interface {
	// CreateKey inserts k; an empty Role is stored as admin. Codes: NOT_FOUND
	// when the account does not exist.
	CreateKey(ctx context.Context, k *APIKey) error
	// GetKey returns one key. Codes: NOT_FOUND.
	GetKey(ctx context.Context, id string) (*APIKey, error)
	// ListKeys returns an account's keys, oldest first.
	ListKeys(ctx context.Context, accountID string) ([]*APIKey, error)
	// RevokeKey marks a key revoked at t; revoking twice keeps the first time.
	// Codes: NOT_FOUND.
	RevokeKey(ctx context.Context, id string, t time.Time) (*APIKey, error)
}
