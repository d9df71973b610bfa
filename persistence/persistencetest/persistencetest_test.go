package persistencetest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// fakeTB records the first Fatal/Skip and stops the helper like the real
// testing.T would (there via runtime.Goexit, here via panic).
type fakeTB struct {
	testing.TB
	stopped string
}

type stop struct{}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.stopped = "fatal: " + fmt.Sprintf(format, args...)
	panic(stop{})
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.stopped = "skip: " + fmt.Sprintf(format, args...)
	panic(stop{})
}

func run(f *fakeTB, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(stop); !ok {
				panic(r)
			}
		}
	}()
	fn()
}

// No t.Parallel: t.Setenv forbids it.
func TestBackends_Environment(t *testing.T) {
	tests := []struct {
		name, ci, url string
		wantNames     []string
		wantStopped   string
	}{
		{name: "local without postgres", wantNames: []string{"sqlite"}},
		{name: "ci without postgres fails", ci: "true", wantStopped: "fatal: persistencetest: CI=true but CONTENTEVAL_TEST_DATABASE_URL is not set; PostgreSQL tests must run in CI"},
		{name: "ci=false without postgres", ci: "false", wantNames: []string{"sqlite"}},
		{name: "with postgres", ci: "true", url: "postgres://x/y", wantNames: []string{"sqlite", "postgres"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CI", tt.ci)
			t.Setenv(persistencetest.EnvDatabaseURL, tt.url)
			f := &fakeTB{TB: t}
			var names []string
			run(f, func() {
				for _, b := range persistencetest.Backends(f) {
					names = append(names, b.Name)
				}
			})
			require.Equal(t, tt.wantStopped, f.stopped)
			require.Equal(t, tt.wantNames, names)
		})
	}
}

func TestOpen_PostgresWithoutURL(t *testing.T) {
	t.Setenv(persistencetest.EnvDatabaseURL, "")
	for ci, want := range map[string]string{
		"":     "skip: persistencetest: CONTENTEVAL_TEST_DATABASE_URL not set",
		"true": "fatal: persistencetest: CI=true but CONTENTEVAL_TEST_DATABASE_URL is not set; PostgreSQL tests must run in CI",
	} {
		t.Setenv("CI", ci)
		f := &fakeTB{TB: t}
		run(f, func() { persistencetest.Open(f, persistencetest.Postgres) })
		require.Equal(t, want, f.stopped)
	}
}

func TestOpen_UnknownBackend(t *testing.T) {
	t.Parallel()
	f := &fakeTB{TB: t}
	run(f, func() { persistencetest.Open(f, "mysql") })
	require.Equal(t, `fatal: persistencetest: unknown backend "mysql"`, f.stopped)
}

func TestRun_IsolatesDatabases(t *testing.T) {
	t.Parallel()
	// Two Runs in parallel create the same row; each must see only its own.
	for i := range 2 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
				_, err := db.ExecContext(t.Context(), db.Rebind(
					`INSERT INTO accounts (id, name, type, created, updated) VALUES ('same', 'n', 'label-first', ?, ?)`),
					time.Now(), time.Now())
				require.NoError(t, err)
				var n int
				require.NoError(t, db.GetContext(t.Context(), &n, `SELECT COUNT(*) FROM accounts`))
				require.Equal(t, 1, n)
			})
		})
	}
}
