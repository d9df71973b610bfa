package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// skipWithoutPeakRSS skips a process memory test under -short (saying
// why it is long) or where there is no /proc to read a process's peak RSS.
func skipWithoutPeakRSS(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc (Linux) to read a process's peak RSS")
	}
}

// memoryDB is a database prepared for the server processes a memory test
// starts: one policy-first account and its API key.
type memoryDB struct {
	dir, dbURL, keyFile, token string
}

// setupMemoryDB migrates dbURL (SQLite in a new temporary directory when
// it is ""), creates the account name with its key, lets prepare create
// what the test evaluates, and closes the store, so that the processes the
// test starts have the database to themselves.
func setupMemoryDB(t *testing.T, name, dbURL string, prepare func(ctx context.Context, m *Main, a *domain.Account)) *memoryDB {
	t.Helper()
	ctx := context.Background()
	db := &memoryDB{dir: t.TempDir(), dbURL: dbURL}
	if db.dbURL == "" {
		db.dbURL = "sqlite:" + filepath.Join(db.dir, "ce.db")
	}
	db.keyFile = filepath.Join(db.dir, "jwt.pem")
	cfg := testConfig(t)
	cfg.DatabaseURL, cfg.JWTKeyFile = db.dbURL, db.keyFile
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: io.Discard}
	require.NoError(t, m.Open(ctx, true))
	defer func() { require.NoError(t, m.Close()) }()
	a, err := createAccount(ctx, m, name, domain.AccountPolicyFirst)
	require.NoError(t, err)
	_, db.token, err = m.Keys.Issue(ctx, a.ID, name, 0)
	require.NoError(t, err)
	prepare(ctx, m, a)
	return db
}

// createPolicy is a prepare of setupMemoryDB: it creates the policy key
// with text and stores its id in id.
func createPolicy(t *testing.T, key, text string, id *string) func(context.Context, *Main, *domain.Account) {
	return func(ctx context.Context, m *Main, a *domain.Account) {
		p, _, err := m.Policies.Create(ctx, a, key, text)
		require.NoError(t, err)
		*id = p.ID
	}
}
