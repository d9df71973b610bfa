package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/contenteval/contenteval/modelbackend"
	"github.com/spf13/cobra"
)

const backendsUsage = `usage:
  contenteval backends check [--backends-file FILE] [--timeout 60s]

check validates the backends file (every error with its line) and calls every
backend once with a harmless probe, printing its latency, score and how the
score was read (logprob or label). Exit 1 when the file is invalid or a
backend fails. FILE defaults to $CONTENTEVAL_BACKENDS_FILE.
`

// backendsCommand implements `contenteval backends check`.
func (c *command) backendsCommand() *cobra.Command {
	fs := newFlagSet("backends check")
	file := fs.String("backends-file", c.getenv("CONTENTEVAL_BACKENDS_FILE"), "the backends file ($CONTENTEVAL_BACKENDS_FILE)")
	timeout := fs.Duration("timeout", time.Minute, "longest wait for all the backends")
	check := &cobra.Command{Use: "check [--backends-file FILE] [--timeout 60s]", Short: "call every model backend once", Args: cobra.NoArgs,
		RunE: c.action(func(*cobra.Command, []string) int { return checkBackends(c.ctx, c.stdout, c.stderr, *file, *timeout) })}
	g := c.group("backends", "check the model backends", withGoFlags(check, fs))
	g.Long = backendsUsage
	return g
}

func checkBackends(ctx context.Context, stdout, stderr io.Writer, file string, timeout time.Duration) int {
	reg, code := loadBackends(file, stderr)
	if reg == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BACKEND\tMODEL\tPROFILE\tRESULT\tLATENCY\tSCORE\tTOKENS")
	failed := false
	for _, name := range reg.Stacks() {
		b, _ := reg.Backend(name)
		r := b.Check(ctx)
		if r.Err != nil {
			failed = true
			fmt.Fprintf(tw, "%s\t%s\t%s\tFAILED: %v\t%s\t-\t-\n", name, b.Model(), b.Profile(), r.Err, r.Latency.Round(time.Millisecond))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\tok\t%s\t%.4f (%s)\t%d\n", name, b.Model(), b.Profile(), r.Latency.Round(time.Millisecond), r.Score, r.Reading, r.InputTokens)
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

// loadBackends reads a backends file for a CLI command; nil and the exit
// code when it cannot.
func loadBackends(file string, stderr io.Writer) (*modelbackend.Registry, int) {
	if file == "" {
		fmt.Fprintln(stderr, "contenteval: no backends file: give --backends-file or set CONTENTEVAL_BACKENDS_FILE")
		return nil, 2
	}
	f, err := modelbackend.LoadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "contenteval: %v\n", err)
		return nil, 1
	}
	return modelbackend.NewRegistry(f, nil, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))), 0
}
