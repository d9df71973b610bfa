package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/contenteval/contenteval/modelbackend"
)

const backendsUsage = `usage:
  contenteval backends check [--backends-file FILE] [--timeout 60s]

check validates the backends file (every error with its line) and calls every
backend once with a harmless probe, printing its latency, score and how the
score was read (logprob or label). Exit 1 when the file is invalid or a
backend fails. FILE defaults to $CONTENTEVAL_BACKENDS_FILE.
`

// runBackends implements `contenteval backends check`.
func runBackends(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || args[0] != "check" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, backendsUsage)
			return 0
		}
		fmt.Fprint(stderr, backendsUsage)
		return 2
	}
	fs := flag.NewFlagSet("backends check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, backendsUsage) }
	file := fs.String("backends-file", getenv("CONTENTEVAL_BACKENDS_FILE"), "the backends file")
	timeout := fs.Duration("timeout", time.Minute, "longest wait for all the backends")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	reg, code := loadBackends(*file, stderr)
	if reg == nil {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
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
