package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// healthcheck runs the command with only env set and returns its exit code
// and stderr.
func healthcheck(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"healthcheck"}, args...), &out, &errOut, func(k string) string { return env[k] })
	if code == 0 {
		require.Equal(t, "ready\n", out.String())
	}
	return code, errOut.String()
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestHealthcheckAsksReadyz(t *testing.T) {
	t.Parallel()
	var lastPath atomic.Value
	respond := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			lastPath.Store(r.URL.Path)
			if status == http.StatusFound {
				http.Redirect(w, r, "/elsewhere", status)
				return
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	_, port, err := net.SplitHostPort(respond(http.StatusOK, "ready\n"))
	require.NoError(t, err)
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantErr  string
	}{
		{name: "ready", args: []string{"--addr", respond(http.StatusOK, "ready\n")}, wantCode: 0},
		{name: "wildcard listen address is asked on loopback", args: []string{"--addr", ":" + port}, wantCode: 0},
		{name: "address from the environment", env: map[string]string{"CONTENTEVAL_ADDR": "0.0.0.0:" + port}, wantCode: 0},
		{name: "not ready names the reason", args: []string{"--addr", respond(http.StatusServiceUnavailable, `{"message":"database is not reachable"}`)}, wantCode: 1, wantErr: "database is not reachable"},
		{name: "a redirect is not ready", args: []string{"--addr", respond(http.StatusFound, "")}, wantCode: 1, wantErr: "302"},
		{name: "nothing listening", args: []string{"--addr", closedPort(t)}, wantCode: 1, wantErr: "not ready"},
		{name: "api role asks readyz", args: []string{"--role", "api", "--addr", respond(http.StatusOK, "")}, wantCode: 0},
		{name: "address without port", args: []string{"--addr", "localhost"}, wantCode: 2, wantErr: "--addr"},
		{name: "address with a path", args: []string{"--addr", "evil.example/x:80"}, wantCode: 2, wantErr: "--addr"},
		{name: "unknown role", args: []string{"--role", "everything"}, wantCode: 2, wantErr: "--role"},
		{name: "zero timeout", args: []string{"--timeout", "0s"}, wantCode: 2, wantErr: "--timeout"},
		{name: "stray argument", args: []string{"now"}, wantCode: 2, wantErr: "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := healthcheck(t, tt.env, tt.args...)
			require.Equal(t, tt.wantCode, code, stderr)
			require.Contains(t, stderr, tt.wantErr)
		})
	}
	require.Equal(t, "/readyz", lastPath.Load())
}

// A worker has no listener: its check is the database /readyz would ask.
func TestHealthcheckWorkerAsksTheDatabase(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	type check struct {
		name     string
		env      map[string]string
		wantCode int
		wantErr  string
	}
	tests := []check{
		{name: "sqlite", env: map[string]string{"CONTENTEVAL_ROLE": "worker", "CONTENTEVAL_DATA_DIR": dataDir}, wantCode: 0},
		{name: "postgres unreachable", env: map[string]string{"CONTENTEVAL_ROLE": "worker", "CONTENTEVAL_DATA_DIR": dataDir,
			"CONTENTEVAL_DATABASE_URL": "postgres://nobody@" + closedPort(t) + "/none?sslmode=disable"}, wantCode: 1, wantErr: "not ready"},
		{name: "bad database url", env: map[string]string{"CONTENTEVAL_ROLE": "worker", "CONTENTEVAL_DATABASE_URL": "mysql://x"}, wantCode: 2, wantErr: "--database-url"},
	}
	for _, b := range persistencetest.Backends(t) {
		if b.Name == persistencetest.Postgres {
			tests = append(tests, check{name: "postgres", env: map[string]string{"CONTENTEVAL_ROLE": "worker", "CONTENTEVAL_DATA_DIR": dataDir,
				"CONTENTEVAL_DATABASE_URL": os.Getenv(persistencetest.EnvDatabaseURL)}, wantCode: 0})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := healthcheck(t, tt.env, "--health-addr=")
			require.Equal(t, tt.wantCode, code, stderr)
			require.Contains(t, stderr, tt.wantErr)
		})
	}
	require.FileExists(t, filepath.Join(dataDir, "contenteval.db"))
}

// The command against a real server: ready while it serves.
func TestHealthcheckAgainstServer(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		code, stderr := healthcheck(t, nil, "--addr", env.Main.Addr())
		require.Equal(t, 0, code, stderr)
	})
}
