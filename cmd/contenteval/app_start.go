package main

// The first start's side: the bootstrap account and key, the signing key
// file, the logger and the data directory's permissions.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/tracing"
)

// bootstrap creates the first account and key on an empty database and
// prints the key once: `make run` must give a usable key with no other setup.
func (m *Main) bootstrap(ctx context.Context) error {
	n, err := m.Accounts.CountAccounts(ctx)
	if err != nil || n > 0 {
		return err
	}
	a, err := createAccount(ctx, m, "default", domain.AccountLabelFirst)
	if err != nil {
		return err
	}
	_, token, err := m.Keys.Issue(ctx, a.ID, "bootstrap", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, `
First start: created account %q (%s, id %s) and this API key. It is shown once:

  %s

Try:  curl -H "Authorization: Bearer <key>" http://localhost%s/v1/labels
A policy-first account (for /v1/jobs and /v1/policies):
  contenteval accounts create --name NAME --type policy-first
  contenteval keys create --account ACCOUNT_ID

`, a.Name, a.Type, a.ID, token, portOf(m.Config.Addr))
	return nil
}

func portOf(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	return ":" + port
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	if w == nil {
		w = os.Stderr
	}
	return slog.New(tracing.LogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})))
}

// loadOrCreateSigningKey reads the Ed25519 key (PKCS#8 PEM), creating it with
// mode 0600 when the file does not exist yet.
func loadOrCreateSigningKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, priv, gerr := ed25519.GenerateKey(rand.Reader)
		if gerr != nil {
			return nil, gerr
		}
		der, merr := x509.MarshalPKCS8PrivateKey(priv)
		if merr != nil {
			return nil, merr
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
		f, cerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(cerr, fs.ErrExist) {
			return loadOrCreateSigningKey(path) // another process won the race
		}
		if cerr != nil {
			return nil, fmt.Errorf("signing key: %w", cerr)
		}
		defer f.Close()
		if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
			return nil, fmt.Errorf("signing key: %w", err)
		}
		return priv, f.Sync()
	}
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("signing key %s: not PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s: not an Ed25519 key", path)
	}
	return priv, nil
}

// warnOpenDataDir warns when others may enter the data directory. The
// files in it are created 0600 and a directory created here is 0700, but an
// existing one is the operator's: it is not narrowed behind their back.
func warnOpenDataDir(log *slog.Logger, dir string) {
	fi, err := os.Stat(dir)
	if err == nil && fi.IsDir() && fi.Mode().Perm()&0o077 != 0 {
		log.Warn("the data directory is open to other users; chmod 700 it", "mode", fmt.Sprintf("%#o", fi.Mode().Perm()))
	}
}

func persistenceKeys(m *Main) *persistence.Keys { return persistence.NewKeys(m.DB) }
