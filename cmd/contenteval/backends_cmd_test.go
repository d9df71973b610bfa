package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/modelbackend/modelbackendtest"
)

func TestBackendsCheck(t *testing.T) {
	t.Parallel()
	fake := modelbackendtest.New(modelbackendtest.LlamaCPP, guardDecides)
	t.Cleanup(fake.Close)
	cfg := &Config{}
	withModelBackends(t, fake)(cfg)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"backends", "check", "--backends-file", cfg.BackendsFile}, &out, &errb, func(string) string { return "" })
	require.Equal(t, 1, code, "the dead backends fail the check: %s", errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4, out.String())
	require.Regexp(t, `^guard\s+llama-guard-3-8b\s+llama-guard\s+ok\s+\d+(ms|s)\s+0\.1000 \(logprob\)\s+120$`, lines[3])
	require.Regexp(t, `^dead\s+gone-1\s+generic\s+FAILED: unreachable`, lines[1])
	require.EqualValues(t, 1, fake.Calls())

	// Every error of an invalid file, with its line; the environment names the file.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("backends:\n  - name: a\n    url: http://x/v1\n    profile: nope\n"), 0o600))
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"backends", "check"}, &out, &errb, func(k string) string {
		return map[string]string{"CONTENTEVAL_BACKENDS_FILE": bad}[k]
	})
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), `line 2: backend "a": model is required`)
	require.Contains(t, errb.String(), `line 2: backend "a": profile "nope" is not one of`)

	code = run(context.Background(), []string{"backends", "check"}, &out, &errb, func(string) string { return "" })
	require.Equal(t, 2, code, "no file is a usage error")
}

func TestRulesEvalWithBackend(t *testing.T) {
	t.Parallel()
	fake := modelbackendtest.New(modelbackendtest.Ollama, guardDecides)
	t.Cleanup(fake.Close)
	cfg := &Config{}
	withModelBackends(t, fake)(cfg)
	file := writeRules(t, "LABEL \"Scam\" {\n    QUESTION(\"Is it a scam?\")\n}\n")
	var out, errb bytes.Buffer
	env := func(k string) string { return map[string]string{"CONTENTEVAL_BACKENDS_FILE": cfg.BackendsFile}[k] }
	code := run(context.Background(), []string{"rules", "eval", file, "--text", "surely a scam", "--backend", "guard"}, &out, &errb, env)
	require.Equal(t, 0, code, errb.String())
	var rep map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
	a := firstAssertion(sectionsOf(t, rep)["Scam"])
	require.Equal(t, "OUTCOME_TRUE", rep["result"])
	require.Equal(t, `QUESTION("Is it a scam?") (model llama-guard-3-8b, label)`, a["message"], "Ollama gives no logprobs")

	code = run(context.Background(), []string{"rules", "eval", file, "--text", "x", "--backend", "nope"}, &out, &errb, env)
	require.Equal(t, 2, code)
}
