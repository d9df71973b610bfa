package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPortConnectionLimits: the connection settings reach the shared port.
// A connection that says nothing is closed at --conn-start-timeout; a
// client holding --max-conns-per-client keep-alive connections has its
// next one closed on accept, and gets its place back when it closes one.
// Both show in contenteval_connections_refused_total.
func TestPortConnectionLimits(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.MaxConnsPerClient, c.ConnStartTimeout = 2, 100*time.Millisecond }, func(t *testing.T, env *testEnv) {
		silent := dialPort(t, env)
		requireServerCloses(t, silent)

		first := keptAlive(t, env)
		keptAlive(t, env)
		over := dialPort(t, env)
		requireServerCloses(t, over)
		require.NoError(t, first.Close())

		// The server sees the close on its own time: wait for the place.
		var metrics string
		require.Eventually(t, func() bool {
			resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get(env.URL + "/metrics")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			metrics = string(b)
			return err == nil && resp.StatusCode == http.StatusOK
		}, 20*time.Second, 10*time.Millisecond)
		require.Contains(t, metrics, `contenteval_connections_refused_total{reason="start_timeout"} 1`)
		require.Contains(t, metrics, `contenteval_connections_refused_total{reason="max_conns_per_client"}`)
	})
}

func dialPort(t *testing.T, env *testEnv) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", env.Main.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// keptAlive is an HTTP/1 connection that has been answered once and stays
// open (REST keeps idle connections for two minutes).
func keptAlive(t *testing.T, env *testEnv) net.Conn {
	t.Helper()
	c := dialPort(t, env)
	_, err := c.Write([]byte("GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return c
}

// requireServerCloses waits (bounded) for the server to close c.
func requireServerCloses(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection open")
	require.True(t, errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset"), "%v", err)
}
