package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// testClock is a settable clock shared by the server and the test.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// testAccount is an account with a working key.
type testAccount struct {
	ID    string
	Token string
}

// testEnv is a real server (Main on 127.0.0.1:0) over a private database.
type testEnv struct {
	t           *testing.T
	Backend     string
	Main        *Main
	URL         string
	Clock       *testClock
	LabelFirst  testAccount
	PolicyFirst testAccount
}

// testConfig is the server configuration tests start from.
func testConfig(t *testing.T) Config {
	dir := t.TempDir()
	return Config{
		Addr: "127.0.0.1:0", DataDir: dir, DatabaseURL: "unused",
		JWTKeyFile: filepath.Join(dir, "jwt.pem"), Role: "all", LogLevel: "error",
		BodyLimit: 32 << 20, RateRPS: 0, RateBurst: 0, KeyCacheTTL: 0, ShutdownTimeout: 5 * time.Second,
	}
}

// forEachBackend runs fn as a parallel subtest on SQLite and (when
// configured) PostgreSQL, each with its own server and database.
func forEachBackend(t *testing.T, configure func(*Config), fn func(t *testing.T, env *testEnv)) {
	t.Helper()
	for _, b := range persistencetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, startServer(t, b, configure))
		})
	}
}

func startServer(t *testing.T, b persistencetest.Backend, configure func(*Config)) *testEnv {
	t.Helper()
	return startServerOn(t, b.Name, b.Open(t), configure)
}

func startServerOn(t *testing.T, backend string, db *persistence.DB, configure func(*Config)) *testEnv {
	t.Helper()
	cfg := testConfig(t)
	if configure != nil {
		configure(&cfg)
	}
	clock := &testClock{now: time.Now().UTC().Truncate(time.Second)}
	// The server's log is kept, and shown only when the test fails: a
	// warning is often the one trace of why a job never finished.
	logs := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log (level %s):\n%s", cfg.LogLevel, logs.String())
		}
	})
	m := &Main{Config: cfg, Stdout: io.Discard, Stderr: logs, Clock: clock, DB: db}
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, m.Open(ctx, false))
	require.NoError(t, m.Listen())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("server did not shut down")
		}
	})
	env := &testEnv{t: t, Backend: backend, Main: m, URL: "http://" + m.Addr(), Clock: clock}
	registerContractHost(env.URL)
	env.LabelFirst = env.newAccount("label", domain.AccountLabelFirst)
	env.PolicyFirst = env.newAccount("policy", domain.AccountPolicyFirst)
	return env
}

func (e *testEnv) newAccount(name string, typ domain.AccountType) testAccount {
	e.t.Helper()
	a, err := createAccount(context.Background(), e.Main, name, typ)
	require.NoError(e.t, err)
	_, token, err := e.Main.Keys.Issue(context.Background(), a.ID, "test", 0)
	require.NoError(e.t, err)
	return testAccount{ID: a.ID, Token: token}
}

// Client returns a generated API client authenticating as token.
func (e *testEnv) Client(token string) *client.ClientWithResponses {
	e.t.Helper()
	c, err := client.NewClientWithResponses(e.URL, client.WithHTTPClient(specClient), client.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}))
	require.NoError(e.t, err)
	return c
}

// rawResponse is a response read whole, for error-body assertions.
type rawResponse struct {
	Status int
	Header http.Header
	Body   []byte
	Req    *http.Request
}

// do sends a raw request (for what a generated client cannot send: bad
// tokens, malformed JSON, unknown routes).
func (e *testEnv) do(method, path, token, contentType, body string) rawResponse {
	e.t.Helper()
	req, err := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	require.NoError(e.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := specClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	req.Body = io.NopCloser(strings.NewReader(body))
	return rawResponse{Status: resp.StatusCode, Header: resp.Header, Body: b, Req: req}
}

// statusOf decodes a Status body.
func statusOf(t *testing.T, r rawResponse) client.Status {
	t.Helper()
	var s client.Status
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	require.NoError(t, dec.Decode(&s), "body: %s", r.Body)
	return s
}

var ioCopy = io.Copy

// binary is the contenteval command built once per test binary run, shared
// by the tests that run real processes; TestMain removes it.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// waitReady waits until the server process at url answers 200 on
// /readyz.
func waitReady(t *testing.T, url string) {
	t.Helper()
	testwait.For(t, 30*time.Second, url+"/readyz", func() (bool, error) {
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("HTTP %d", resp.StatusCode)
	})
}

// buildBinary returns the contenteval command, built on first use into a
// temporary directory, for the tests that run real processes (and kill
// them).
func buildBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "contenteval-bin-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "contenteval")
		build := exec.Command("go", "build", "-o", binary.path, ".")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			binary.err = fmt.Errorf("go build: %w", err)
		}
	})
	require.NoError(t, binary.err)
	return binary.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if report := contractReport(); report != "" {
		fmt.Fprintf(os.Stderr, "responses that do not match openapi.yaml:\n%s\n", report)
		if code == 0 {
			code = 1
		}
	}
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// privateSchema creates a fresh schema on the test PostgreSQL
// (CONTENTEVAL_TEST_DATABASE_URL) and returns a URL that uses it, its name,
// and an admin handle outside it. The schema is dropped, then the handle
// closed, when t ends.
func privateSchema(t *testing.T, prefix string) (dbURL, schema string, admin *persistence.DB) {
	t.Helper()
	ctx := context.Background()
	base := os.Getenv(persistencetest.EnvDatabaseURL)
	admin, err := persistence.Open(ctx, base)
	require.NoError(t, err)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema = prefix + hex.EncodeToString(b)
	_, err = admin.ExecContext(ctx, "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = admin.Close()
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), schema, admin
}
