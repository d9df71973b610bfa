package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
)

// TestRetentionExpiredJobsAreNotFound: once a job is past the server's
// retention and a sweep ran, GET of it is NOT_FOUND and the list leaves it
// out.
func TestRetentionExpiredJobsAreNotFound(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(c *Config) { c.Retention = 24 * time.Hour }, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		policy := env.createPolicy(tok, "retention")
		j := env.submit(tok, client.CreateJobRequest{PolicyId: policy, ContentData: []client.ContentData{textItem("hello", nil)},
			WaitForCompletion: ptr(true)})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
		path := "/v1/jobs/" + j.JobUuid
		requireStatus200 := env.call(http.MethodGet, path, tok, "")
		require.Equal(t, http.StatusOK, requireStatus200.Status)

		env.Clock.Add(25 * time.Hour)
		rep, err := env.Main.Retention.Sweep(context.Background())
		require.NoError(t, err)
		require.Positive(t, rep.RowsDeleted)

		requireStatus(t, env.call(http.MethodGet, path, tok, ""), http.StatusNotFound, domain.NotFound)
		list := env.call(http.MethodGet, "/v1/jobs?pageSize=100", tok, "")
		require.Equal(t, http.StatusOK, list.Status)
		require.NotContains(t, string(list.Body), j.JobUuid)
	})
}

// TestCLIAccountsRetention: an account's own retention is set and listed
// by the CLI in days; bad values are one-line errors.
func TestCLIAccountsRetention(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := cli(t, dir, "accounts", "create", "--name", "acme", "--json")
	require.Equal(t, 0, code, errOut)
	id := jsonObject(t, out, "accountId", "name", "type")["accountId"].(string)

	for _, tc := range []struct {
		value string
		days  float64
	}{
		{"7d", 7}, {"12h", 0.5}, {"172800", 2}, {"0", 0},
	} {
		code, out, errOut = cli(t, dir, "accounts", "set", id, "--retention", tc.value, "--json")
		require.Equal(t, 0, code, errOut)
		require.Equal(t, tc.days, jsonObject(t, out, "accountId", "retentionDays")["retentionDays"], tc.value)
		code, out, _ = cli(t, dir, "accounts", "list", "--json")
		require.Equal(t, 0, code)
		listed := jsonObject(t, out, "accounts")["accounts"].([]any)[0].(map[string]any)
		require.Equal(t, tc.days, listed["retentionDays"])
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"unknown account", []string{"accounts", "set", "nope", "--retention", "7d"}, 1},
		{"bad retention", []string{"accounts", "set", id, "--retention", "soon"}, 1},
		{"negative retention", []string{"accounts", "set", id, "--retention", "-1d"}, 1},
		{"no retention", []string{"accounts", "set", id}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(t, dir, tc.args...)
			require.Equal(t, tc.code, code, "stderr: %s", errOut)
			require.Empty(t, out)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one-line error: %q", errOut)
		})
	}
}

func TestParseRetention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30d", 30 * 24 * time.Hour, true}, {"0", 0, true}, {"12h", 12 * time.Hour, true}, {"90s", 90 * time.Second, true},
		{"45", 45 * time.Second, true}, {" 7d ", 7 * 24 * time.Hour, true},
		{"", 0, false}, {"-1d", 0, false}, {"-5", 0, false}, {"-1h", 0, false}, {"7w", 0, false}, {"d", 0, false},
		{"99999999999d", 0, false}, {"1.5d", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var got time.Duration
			err := parseRetention(&got, tc.in)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
