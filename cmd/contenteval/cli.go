package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// command is one run of the command line: where commands write, the environment
// they read and the exit code they leave (0 success, 1 failure, 2 usage).
type command struct {
	ctx            context.Context
	stdout, stderr io.Writer
	getenv         func(string) string
	code           int
}

// run executes one command and returns the exit code: 0 success, 1 failure,
// 2 usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &command{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv}
	root := c.rootCommand()
	if len(args) == 0 {
		root.SetOut(stderr)
		_ = root.Usage()
		return 2
	}
	root.SetArgs(goStyleFlags(root, args))
	if cmd, err := root.ExecuteContextC(ctx); err != nil {
		// Errors that reach here are cobra's own: an unknown command or flag,
		// a wrong number of arguments. The commands report theirs in code.
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
		return 2
	}
	return c.code
}

// rootCommand is the command tree; every command parses its own flags.
func (c *command) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "contenteval",
		Short: "The content evaluation server and its operator CLI",
		Long: `contenteval is the content evaluation server and its operator CLI.
Every command reads the same settings (flags over CONTENTEVAL_* variables) and
talks to the database directly, so it works beside a running server.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	root.AddCommand(
		c.serveCommand(),
		c.migrateCommand(),
		c.healthcheckCommand(),
		c.accountsCommand(),
		c.keysCommand(),
		c.rulesCommand(),
		c.backendsCommand(),
		c.hashCommand(),
		c.hashlistsCommand(),
	)
	completeValues(root)
	return root
}

// flagValues are the closed sets of values shell completion offers.
var flagValues = map[string][]string{
	"type":       {"label-first", "policy-first"},
	"kind":       {"md5", "sha1", "pdq"},
	"role":       {"all", "api", "worker"},
	"log-level":  {"debug", "info", "warn", "error"},
	"blob-store": {"local", "s3"},
}

// keyRoleValues are what keys create --role offers; its --role is a key's,
// not serve's process role.
var keyRoleValues = []string{string(domain.RoleAdmin), string(domain.RoleAPI), string(domain.RoleReviewer)}

// completeValues registers flagValues on every command that has the flag,
// and the account types as the second argument of accounts set-type.
func completeValues(cmd *cobra.Command) {
	for name, values := range flagValues {
		if name == "role" && cmd.CommandPath() == "contenteval keys create" {
			values = keyRoleValues
		}
		if cmd.Flags().Lookup(name) != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	if cmd.CommandPath() == "contenteval accounts set-type" {
		cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return flagValues["type"], cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
	}
	for _, sub := range cmd.Commands() {
		completeValues(sub)
	}
}

// action adapts a command body that returns an exit code to cobra.
func (c *command) action(body func(cmd *cobra.Command, args []string) int) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c.code = body(cmd, args)
		return nil
	}
}

// group is a command that only holds subcommands: run alone or with an
// unknown subcommand it is a usage error.
func (c *command) group(use, short string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: c.action(func(cmd *cobra.Command, args []string) int {
			if len(args) > 0 && args[0] == "help" {
				_ = cmd.Help()
				return 0
			}
			msg := "missing subcommand"
			if len(args) > 0 {
				msg = fmt.Sprintf("unknown subcommand %q", args[0])
			}
			fmt.Fprintf(c.stderr, "%s: %s\n", cmd.CommandPath(), msg)
			cmd.SetOut(c.stderr)
			_ = cmd.Usage()
			return 2
		}),
	}
	cmd.AddCommand(subs...)
	return cmd
}

// withGoFlags adds the flags of a standard library flag set (the settings
// bindConfig registers keep their flag.Value types) to cmd.
func withGoFlags(cmd *cobra.Command, fs *flag.FlagSet) *cobra.Command {
	cmd.Flags().AddGoFlagSet(fs)
	return cmd
}

// newFlagSet is a standard library flag set for withGoFlags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// goStyleFlags rewrites the single-dash long flags of the standard library
// (-addr :8080, -json), which every command has always accepted, into the
// double-dash form cobra parses. Only names of the command's own flags are
// rewritten, and a flag's value is never taken for a flag.
func goStyleFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	flags := cmd.Flags()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) < 3 || a[0] != '-' {
			out = append(out, a)
			continue
		}
		name, hasValue := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, hasValue = name[:k], true
		}
		f := lookupFlag(flags, name)
		if f == nil {
			out = append(out, a)
			continue
		}
		if !strings.HasPrefix(a, "--") {
			a = "-" + a
		}
		out = append(out, a)
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

func lookupFlag(fs *pflag.FlagSet, name string) *pflag.Flag {
	if len(name) < 2 {
		return nil // a shorthand such as -h
	}
	return fs.Lookup(name)
}
