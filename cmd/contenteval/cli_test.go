package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cli runs one command against dataDir and returns exit code, stdout, stderr.
func cli(t *testing.T, dataDir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := map[string]string{"CONTENTEVAL_DATA_DIR": dataDir, "CONTENTEVAL_LOG_LEVEL": "error"}
	code := run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
	return code, out.String(), errOut.String()
}

// jsonObject requires stdout to be exactly one JSON object with these keys.
func jsonObject(t *testing.T, stdout string, keys ...string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var m map[string]any
	require.NoError(t, dec.Decode(&m), "stdout: %q", stdout)
	require.False(t, dec.More(), "more than one JSON value: %q", stdout)
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	require.ElementsMatch(t, keys, got, "stdout: %q", stdout)
	return m
}

func TestCLIAccountsAndKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	code, out, errOut := cli(t, dir, "accounts", "create", "--name", "acme", "--type", "policy-first", "--json")
	require.Equal(t, 0, code, errOut)
	acct := jsonObject(t, out, "accountId", "name", "type")
	require.Equal(t, "acme", acct["name"])
	require.Equal(t, "policy-first", acct["type"])
	id := acct["accountId"].(string)

	code, out, _ = cli(t, dir, "accounts", "create", "--name", "plain", "--json")
	require.Equal(t, 0, code)
	require.Equal(t, "label-first", jsonObject(t, out, "accountId", "name", "type")["type"], "new accounts are label-first")

	code, out, errOut = cli(t, dir, "keys", "create", "--account", id, "--ttl", "720h", "--name", "ci", "--json")
	require.Equal(t, 0, code, errOut)
	key := jsonObject(t, out, "keyId", "token", "role", "name", "expiresAt")
	require.Regexp(t, regexp.MustCompile(`^[\w-]+\.[\w-]+\.[\w-]+$`), key["token"])
	require.NotNil(t, key["expiresAt"])

	code, out, _ = cli(t, dir, "keys", "create", "--account", id, "--json")
	require.Equal(t, 0, code)
	require.Nil(t, jsonObject(t, out, "keyId", "token", "role", "name", "expiresAt")["expiresAt"], "no --ttl: no expiry")

	code, out, _ = cli(t, dir, "keys", "list", "--account", id, "--json")
	require.Equal(t, 0, code)
	require.Len(t, jsonObject(t, out, "keys")["keys"], 2)

	code, out, errOut = cli(t, dir, "accounts", "set-type", id, "label-first", "--json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "label-first", jsonObject(t, out, "accountId", "name", "type")["type"])

	code, out, errOut = cli(t, dir, "accounts", "set-limits", id, "--rps", "5", "--burst", "10", "--evaluations-per-day", "1000", "--json")
	require.Equal(t, 0, code, errOut)
	lim := jsonObject(t, out, "accountId", "rps", "burst", "evaluationsPerDay")
	require.EqualValues(t, 5, lim["rps"])
	require.EqualValues(t, 1000, lim["evaluationsPerDay"])

	code, out, _ = cli(t, dir, "accounts", "webhook-secret", id, "--json")
	require.Equal(t, 0, code)
	secret := jsonObject(t, out, "secret")["secret"].(string)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	_, out2, _ := cli(t, dir, "accounts", "webhook-secret", id, "--json")
	require.Equal(t, secret, jsonObject(t, out2, "secret")["secret"], "the secret is stable")

	code, out, errOut = cli(t, dir, "keys", "revoke", key["keyId"].(string))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "revoked")

	code, out, _ = cli(t, dir, "accounts", "list", "--json")
	require.Equal(t, 0, code)
	require.Len(t, jsonObject(t, out, "accounts")["accounts"], 2)
}

func TestCLIErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"unknown command", []string{"frobnicate"}, 2},
		{"missing subcommand", []string{"accounts"}, 2},
		{"unknown subcommand", []string{"keys", "burn"}, 2},
		{"missing name", []string{"accounts", "create"}, 2},
		{"bad type", []string{"accounts", "create", "--name", "x", "--type", "both"}, 1},
		{"unknown account for key", []string{"keys", "create", "--account", "nope"}, 1},
		{"unknown account set-type", []string{"accounts", "set-type", "nope", "policy-first"}, 1},
		{"bad type set-type", []string{"accounts", "set-type", "nope", "admin"}, 1},
		{"unknown account limits", []string{"accounts", "set-limits", "nope", "--rps", "1"}, 1},
		{"negative limits", []string{"accounts", "set-limits", "nope", "--rps", "-1"}, 1},
		{"unknown key revoke", []string{"keys", "revoke", "nope"}, 1},
		{"bad ttl", []string{"keys", "create", "--account", "x", "--ttl", "soon"}, 2},
		{"unknown account list keys", []string{"keys", "list", "--account", "nope"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(t, dir, tc.args...)
			require.Equal(t, tc.code, code, "stderr: %s", errOut)
			require.Empty(t, out)
			if tc.code == 1 {
				require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one-line error: %q", errOut)
				require.NotContains(t, errOut, "sql")
			}
		})
	}
}

func TestBootstrapOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	cfg := testConfig(t)
	cfg.DataDir, cfg.DatabaseURL, cfg.JWTKeyFile = dir, "sqlite:"+filepath.Join(dir, "ce.db"), filepath.Join(dir, "k.pem")
	m := &Main{Config: cfg, Stdout: &out, Stderr: &bytes.Buffer{}}
	require.NoError(t, m.Open(ctx, true))
	defer m.Close()
	require.NoError(t, m.bootstrap(ctx))
	token := regexp.MustCompile(`\n  (eyJ[\w-]+\.[\w-]+\.[\w-]+)\n`).FindStringSubmatch(out.String())
	require.NotNil(t, token, "no key printed: %s", out.String())
	a, err := m.Keys.Authenticate(ctx, token[1])
	require.NoError(t, err)
	require.Equal(t, "default", a.Name)
	require.Equal(t, "label-first", string(a.Type))
	require.Contains(t, out.String(), "--type policy-first")

	// A second start creates nothing and prints nothing.
	out.Reset()
	require.NoError(t, m.bootstrap(ctx))
	require.Empty(t, out.String())
	cancel()
}

// TestCLIAccountsSetModerationDefaults: accounts set --moderation-policy and
// --moderation-tag refuse what the account does not have, and clear with "".
func TestCLIAccountsSetModerationDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := cli(t, dir, "accounts", "create", "--name", "p", "--type", "policy-first", "--json")
	require.Equal(t, 0, code, errOut)
	id := jsonObject(t, out, "accountId", "name", "type")["accountId"].(string)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown policy key", []string{"--moderation-policy", "nope"}, 1, `no policy with key "nope"`},
		{"unknown tag", []string{"--moderation-tag", "nope"}, 1, `no label tag named "nope"`},
		{"unknown account", []string{"--moderation-policy", ""}, 1, "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target := id
			if tc.name == "unknown account" {
				target = "no-such-account"
			}
			code, _, errOut := cli(t, dir, append([]string{"accounts", "set", target}, tc.args...)...)
			require.Equal(t, tc.code, code, errOut)
			require.Contains(t, errOut, tc.want)
		})
	}
	code, out, errOut = cli(t, dir, "accounts", "set", id, "--moderation-policy", "", "--moderation-tag", "", "--json")
	require.Equal(t, 0, code, errOut)
	got := jsonObject(t, out, "accountId", "retentionDays", "moderationPolicy", "moderationTag")
	require.Equal(t, "", got["moderationPolicy"])
}
