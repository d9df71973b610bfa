package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// The flags of every command and the variable each setting reads, as the
// CLI had them before it moved to cobra (testdata/cli_flags.golden was
// written from the earlier binary's -h output): no flag or variable is
// renamed, dropped or moved to another command.
func TestCLIFlagsUnchanged(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join("testdata", "cli_flags.golden"))
	require.NoError(t, err)
	c := &command{ctx: context.Background(), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	env := regexp.MustCompile(`\(\$(CONTENTEVAL_[A-Z0-9_]+)\)`)
	var lines []string
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
		if cmd.HasSubCommands() || !cmd.Runnable() || cmd.Parent() == nil {
			return
		}
		var flags []string // in the order of their names
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			name := "--" + f.Name
			if m := env.FindAllStringSubmatch(f.Usage, -1); m != nil {
				name += "=" + m[len(m)-1][1]
			}
			flags = append(flags, name)
		})
		lines = append(lines, strings.TrimPrefix(cmd.CommandPath(), "contenteval ")+": "+strings.Join(flags, " "))
	}
	root := c.rootCommand()
	root.InitDefaultCompletionCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "completion" {
			continue // new: shell completion scripts
		}
		walk(sub)
	}
	sort.Strings(lines)
	require.Equal(t, string(want), strings.Join(lines, "\n")+"\n")
}

// The standard library's single-dash long flags, which scripts and
// container specs may use, keep working; a flag's value is never read as a
// flag, even when it starts with a dash.
func TestCLIGoStyleFlags(t *testing.T) {
	t.Parallel()
	root := (&command{ctx: context.Background(), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}).rootCommand()
	for _, tc := range []struct{ args, want []string }{
		{[]string{"serve", "-addr", ":0", "-no-migrate", "-ocr=false"}, []string{"serve", "--addr", ":0", "--no-migrate", "--ocr=false"}},
		{[]string{"accounts", "create", "-name", "-x", "-json"}, []string{"accounts", "create", "--name", "-x", "--json"}},
		{[]string{"accounts", "set-type", "ID", "policy-first", "-json"}, []string{"accounts", "set-type", "ID", "policy-first", "--json"}},
		{[]string{"rules", "eval", "f.rules", "--text", "-json", "-threshold=0.6"}, []string{"rules", "eval", "f.rules", "--text", "-json", "--threshold=0.6"}},
		{[]string{"keys", "revoke", "-h"}, []string{"keys", "revoke", "-h"}},
		{[]string{"keys", "list", "--", "-account"}, []string{"keys", "list", "--", "-account"}},
		{[]string{"frobnicate", "-x"}, []string{"frobnicate", "-x"}},
	} {
		require.Equal(t, tc.want, goStyleFlags(root, tc.args), "%q", tc.args)
	}

	dir := t.TempDir()
	code, out, errOut := cli(t, dir, "accounts", "create", "-name", "acme", "-type=policy-first", "-json")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "policy-first", jsonObject(t, out, "accountId", "name", "type")["type"])
}

// Help on every level, on stdout with exit 0; a completion script per shell.
func TestCLIHelpAndCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "healthcheck"},
		{[]string{"help"}, "hashlists"},
		{[]string{"help", "keys"}, "revoke"},
		{[]string{"accounts", "--help"}, "set-limits"},
		{[]string{"accounts", "set-limits", "-h"}, "--evaluations-per-day"},
		{[]string{"serve", "--help"}, "CONTENTEVAL_POLICY_CACHE_TTL"},
		{[]string{"rules", "help"}, "rules check FILE"},
		{[]string{"backends", "--help"}, "backends check"},
		{[]string{"completion", "bash"}, "bash completion"},
		{[]string{"completion", "zsh"}, "compdef"},
		{[]string{"__complete", "accounts", "create", "--type", ""}, "label-first\npolicy-first\n"},
		{[]string{"__complete", "accounts", "set-type", "ID", ""}, "policy-first"},
		{[]string{"__complete", "hashlists", "import", "--kind", ""}, "md5\nsha1\npdq\n"},
		{[]string{"__complete", "serve", "--role", ""}, "all\napi\nworker\n"},
		{[]string{"__complete", "keys", "create", "--role", ""}, "admin\napi\nreviewer\n"},
		{[]string{"__complete", "keys", ""}, "revoke"},
	} {
		code, out, errOut := cli(t, dir, tc.args...)
		require.Equal(t, 0, code, "%q: %s", tc.args, errOut)
		require.Contains(t, out, tc.want, "%q", tc.args)
	}
	code, _, errOut := cli(t, dir)
	require.Equal(t, 2, code, "no command")
	require.Contains(t, errOut, "Available Commands")
}
