package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/contenteval/contenteval/console"
	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/internal/testenv"
	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// requireBrowser returns node, the repository root and Chromium for the
// console's browser tests (console/test). Under CI a missing piece fails
// (make node_modules installs playwright-core, make browser-tools Debian's
// chromium); elsewhere it skips.
func requireBrowser(t *testing.T) (node, root, chromium string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	node, err = exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(root, "node_modules", "playwright-core", "package.json"))
	}
	if err == nil {
		chromium = os.Getenv("CONTENTEVAL_CHROMIUM")
		if chromium == "" {
			chromium, err = exec.LookPath("chromium")
		}
	}
	if err != nil {
		testenv.SkipUnlessCI(t, "node, playwright-core or chromium is missing (make node_modules browser-tools): %v", err)
	}
	return node, root, chromium
}

// consoleArtifacts is where the browser tests put their screenshots:
// CONTENTEVAL_CONSOLE_ARTIFACTS/<backend> when set (make test-console and
// .ci/run set it to .artifacts/console), else the test's temporary
// directory, which go test removes.
func consoleArtifacts(t *testing.T, backend string) string {
	t.Helper()
	if dir := os.Getenv("CONTENTEVAL_CONSOLE_ARTIFACTS"); dir != "" {
		dir = filepath.Join(dir, backend)
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	return t.TempDir()
}

// TestConsoleBrowser runs console/test/browser.test.mjs: the review
// console, as embedded in this binary, in a headless Chromium driven by
// playwright-core against a real server on each backend. It signs in,
// finds a job, reads its highlighted span and its timeline marker, gives
// feedback, edits policies and labels with the live check, reads batch
// jobs, reviews (a queue made through the API, claim, decisions and a
// skip by keyboard, the next claim and the empty state, queue admin; a
// reviewer key that sees the review pages only), and
// checks that markup from the API is only ever text, that the
// keyboard reaches everything and that the pages fit 390 px. Screenshots
// of every page go to consoleArtifacts.
func TestConsoleBrowser(t *testing.T) {
	node, root, chromium := requireBrowser(t)
	video := twoSceneVideo(t)
	forEachBackend(t, batchConfig, func(t *testing.T, env *testEnv) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		shots := consoleArtifacts(t, env.Backend)
		cmd := exec.CommandContext(ctx, node, "--test", "--test-concurrency=1", filepath.Join("console", "test", "browser.test.mjs"))
		cmd.Dir = root
		_, reviewerKey, err := env.Main.Keys.IssueRole(ctx, env.PolicyFirst.ID, "Ana", domain.RoleReviewer, 0)
		require.NoError(t, err)
		cmd.Env = append(os.Environ(),
			"CONTENTEVAL_URL="+env.URL,
			"CONTENTEVAL_POLICY_KEY="+env.PolicyFirst.Token,
			"CONTENTEVAL_REVIEWER_KEY="+reviewerKey,
			"CONTENTEVAL_LABEL_KEY="+env.LabelFirst.Token,
			"CONTENTEVAL_VIDEO_FILE="+video,
			"CONTENTEVAL_CHROMIUM="+chromium,
			"CONTENTEVAL_CONSOLE_ARTIFACTS="+shots,
		)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "node --test console/test/browser.test.mjs:\n%s", out)
		require.Contains(t, string(out), "# fail 0")
		require.Contains(t, string(out), "# skipped 0")
		require.NotContains(t, string(out), "# pass 0")
		t.Logf("screenshots in %s", shots)
	})
}

// TestConsoleServed checks the mount without a browser: the console is
// served without a key under its own policy, next to the API, and the
// API's 401 is unchanged beside it.
func TestConsoleServed(t *testing.T) {
	env := startServer(t, persistencetest.Backends(t)[0], nil)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		path   string
		status int
	}{
		{"/console/", 200},
		{"/console/app.js", 200},
		{"/console", 301},
		{"/console/missing", 404},
	} {
		r, err := noRedirect.Get(env.URL + tc.path)
		require.NoError(t, err)
		require.NoError(t, r.Body.Close())
		require.Equal(t, tc.status, r.StatusCode, tc.path)
		require.Equal(t, console.ContentSecurityPolicy, r.Header.Get("Content-Security-Policy"), tc.path)
	}
	require.Equal(t, http.StatusUnauthorized, env.do(http.MethodGet, "/v1/jobs", "", "", "").Status)
}
