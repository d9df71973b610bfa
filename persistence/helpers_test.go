package persistence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
)

// t0 is a fixed clock reading with sub-microsecond digits, so every test
// also checks the truncation to microseconds.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

// newAccount returns a valid label-first account created at created.
func newAccount(id string, created time.Time) *domain.Account {
	return &domain.Account{
		ID:            id,
		Name:          "name of " + id,
		Type:          domain.AccountLabelFirst,
		Limits:        domain.Limits{RequestsPerSecond: 2.5, Burst: 7, EvaluationsPerDay: 1 << 40},
		WebhookSecret: "whsec_" + id,
		Created:       created,
		Updated:       created,
	}
}

// requireCode asserts err carries code and a client message free of driver
// or SQL text.
func requireCode(t testing.TB, err error, code domain.Code) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, code, domain.ErrorCode(err), "error: %v", err)
	msg := strings.ToLower(domain.ErrorMessage(err))
	for _, leak := range []string{"select", "insert", "update ", "constraint", "pq:", "sqlite", "violates", "sqlstate"} {
		require.NotContains(t, msg, leak, "client message leaks driver text")
	}
}
