// Command contenteval is the content evaluation server and its operator CLI.
// Every command reads the same settings (flags over CONTENTEVAL_* variables)
// and talks to the database directly, so it works beside a running server.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/tracing"
	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, envOS)
	stop()
	os.Exit(code)
}

func (c *command) serveCommand() *cobra.Command {
	fs := newFlagSet("serve")
	resolve := bindConfig(fs, true, c.getenv)
	cmd := &cobra.Command{Use: "serve", Short: "run the API server and workers", Args: cobra.NoArgs}
	cmd.RunE = c.action(func(*cobra.Command, []string) int {
		cfg, err := resolve()
		if err != nil {
			fmt.Fprintln(c.stderr, "contenteval serve:", err)
			return 2
		}
		m := &Main{Config: cfg, Stdout: c.stdout, Stderr: c.stderr}
		if err := serve(c.ctx, m); err != nil {
			fmt.Fprintln(c.stderr, "contenteval serve:", err)
			return 1
		}
		return 0
	})
	return withGoFlags(cmd, fs)
}

// serveGCPercent is serve's GOGC unless the environment sets one. A server's
// live heap is small (tens of MiB) while every request allocates, so the
// default (collect each time the heap doubles) spends a tenth of the CPU on
// collections; the jobs load test put that CPU on the p99 of synchronous
// jobs. Four times the live heap is still small.
const serveGCPercent = 400

func serve(ctx context.Context, m *Main) error {
	m.serving = true
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if err := ensureTempDir(os.TempDir()); err != nil {
		return err
	}
	// Before Open: the logger and the database pick their tracing up there.
	// The SDK reads the OTEL_* variables from the process environment.
	stopTracing, err := tracing.Setup(ctx, os.Getenv)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.Config.ShutdownTimeout)
		defer cancel()
		_ = stopTracing(flushCtx) // spans lost at exit are not worth failing it
	}()
	if err := m.Open(ctx, !m.Config.NoMigrate); err != nil {
		return err
	}
	defer m.Close()
	if err := m.bootstrap(ctx); err != nil {
		return err
	}
	// The rule engine's word list and tokenizer load once, not in the first
	// request.
	rules.Warm()
	// Lists are in place before the first request; Watch keeps them fresh.
	if err := m.Precheck.Reload(ctx); err != nil {
		return fmt.Errorf("loading hash lists: %w", err)
	}
	m.preparePartitions(ctx)
	if err := m.OCR.Available(); err != nil {
		m.Log.Warn("OCR disabled", "reason", err.Error())
	}
	if m.Config.Role != "worker" {
		if err := m.Listen(); err != nil {
			return err
		}
	} else if err := m.ListenHealth(); err != nil {
		return err
	}
	return m.Serve(ctx)
}

// exitCode prints err as one line and returns 2 for usage errors, 1 for
// other failures, 0 for none.
func exitCode(stderr io.Writer, name string, err error) int {
	var ue usageError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "contenteval %s: %s\n", name, string(ue))
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "contenteval %s: %s\n", name, cliMessage(err))
		return 1
	}
	return 0
}

type usageError string

func (e usageError) Error() string { return string(e) }

// cliMessage is a one-line error: the domain message when there is one.
func cliMessage(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Message
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func createAccount(ctx context.Context, m *Main, name string, t domain.AccountType) (*domain.Account, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("type %q is not label-first or policy-first", t)
	}
	now := m.Clock.Now()
	a := &domain.Account{ID: uuid.NewString(), Name: name, Type: t, WebhookSecret: newWebhookSecret(), Created: now, Updated: now}
	return a, m.Accounts.CreateAccount(ctx, a)
}

// newWebhookSecret follows the Standard Webhooks format: whsec_ + base64.
func newWebhookSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// printer writes either one JSON object or human text.
type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) object(v any, text string) error {
	if p.json {
		return json.NewEncoder(p.w).Encode(v)
	}
	_, err := fmt.Fprintln(p.w, text)
	return err
}

func (p *printer) line(text string) {
	if p.json {
		_ = json.NewEncoder(p.w).Encode(map[string]any{"ok": true, "message": text})
		return
	}
	fmt.Fprintln(p.w, text)
}
