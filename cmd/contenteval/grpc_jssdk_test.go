package main

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"github.com/contenteval/contenteval/internal/testenv"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/stretchr/testify/require"
)

// requireJSSDK returns node and the repository root, failing under CI (the
// Makefile's node_modules target installs the SDK) and skipping elsewhere
// when node or the SDK is missing.
func requireJSSDK(t *testing.T) (node, root string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	node, err = exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(root, "node_modules", "@clavata", "sdk", "package.json"))
	}
	if err != nil {
		testenv.SkipUnlessCI(t, "node or @clavata/sdk is missing (make node_modules): %v", err)
	}
	return node, root
}

// TestClavataJSSDK runs test/sdk-js/clavata-sdk.test.mjs, the official
// JavaScript SDK in its own node process, against a real server on each
// backend.
func TestClavataJSSDK(t *testing.T) {
	node, root := requireJSSDK(t)
	img := testPNG(t, "I WILL KILL YOU")
	blocked := testPNG(t, "KNOWN BAD")
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true }, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		sum := md5.Sum(blocked)
		_, err := env.Main.Precheck.Import(ctx, "known", imaging.KindMD5, strings.NewReader(hex.EncodeToString(sum[:])+"\n"))
		require.NoError(t, err)
		require.NoError(t, env.Main.Precheck.Reload(ctx))
		policyID := env.imagePolicy(tok, "sdk", img)
		limited := env.newAccount("limited", domain.AccountPolicyFirst)
		_, err = env.Main.Accounts.UpdateAccount(ctx, limited.ID, func(a *domain.Account) error {
			a.Limits.RequestsPerSecond, a.Limits.Burst = 1, 1
			return nil
		})
		require.NoError(t, err)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(img) }))
		defer srv.Close()

		// The server's clock is the test's; it follows real time while the
		// SDK runs, so a rate-limited account's bucket refills before the
		// SDK's retry.
		stopClock := make(chan struct{})
		defer close(stopClock)
		go func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopClock:
					return
				case <-tick.C:
					env.Clock.Add(10 * time.Millisecond)
				}
			}
		}()

		runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(runCtx, node, "--test", filepath.Join("test", "sdk-js", "clavata-sdk.test.mjs"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(),
			"CONTENTEVAL_ADDR="+env.Main.Addr(),
			"CONTENTEVAL_URL="+env.URL,
			"CONTENTEVAL_KEY="+tok,
			"CONTENTEVAL_LIMITED_KEY="+limited.Token,
			"CONTENTEVAL_POLICY_ID="+policyID,
			"CONTENTEVAL_IMAGE_B64="+base64.StdEncoding.EncodeToString(img),
			"CONTENTEVAL_IMAGE_URL="+srv.URL+"/image.png",
			"CONTENTEVAL_BLOCKED_IMAGE_B64="+base64.StdEncoding.EncodeToString(blocked),
			"CONTENTEVAL_BLOCKED_IMAGE_HASH="+imaging.ContentHash(blocked),
		)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "node --test test/sdk-js/clavata-sdk.test.mjs:\n%s", out)
		require.Contains(t, string(out), "# fail 0")
		require.NotContains(t, string(out), "# pass 0")
		t.Logf("%s", out)
	})
}
