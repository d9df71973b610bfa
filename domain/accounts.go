package domain

import (
	"context"
	"time"
)

// AccountType decides which endpoints an account may call (SPEC.md).
type AccountType string

// Account types. New accounts are label-first (DESIGN §3).
const (
	AccountLabelFirst  AccountType = "label-first"
	AccountPolicyFirst AccountType = "policy-first"
)

// Valid reports whether t is a known account type.
func (t AccountType) Valid() bool { return t == AccountLabelFirst || t == AccountPolicyFirst }

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
	Created       time.Time
	Updated       time.Time
}

// APIKey is the record behind a JWT: its id is the token's jti. The token
// itself is never stored.
type APIKey struct {
	ID        string
	AccountID string
	Name      string
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
	// CreateKey inserts k. Codes: NOT_FOUND when the account does not exist.
	CreateKey(ctx context.Context, k *APIKey) error
	// GetKey returns one key. Codes: NOT_FOUND.
	GetKey(ctx context.Context, id string) (*APIKey, error)
	// ListKeys returns an account's keys, oldest first.
	ListKeys(ctx context.Context, accountID string) ([]*APIKey, error)
	// RevokeKey marks a key revoked at t; revoking twice keeps the first time.
	// Codes: NOT_FOUND.
	RevokeKey(ctx context.Context, id string, t time.Time) (*APIKey, error)
}

// Clock is the service's source of time; tests inject a fixed one.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock, in UTC.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() time.Time { return time.Now().UTC() }
