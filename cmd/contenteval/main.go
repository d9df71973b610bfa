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
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/google/uuid"
)

const usage = `usage: contenteval COMMAND [flags]

commands:
  serve                      run the API server and workers
  migrate                    apply database migrations and exit
  accounts create --name N [--type label-first|policy-first] [--json]
  accounts list [--json]
  accounts set-type ID TYPE
  accounts set-limits ID [--rps R] [--burst B] [--evaluations-per-day N]
  accounts webhook-secret ID [--json]
  keys create --account ID [--ttl 720h] [--name N] [--json]
  keys list --account ID [--json]
  keys revoke KEY_ID
  rules check FILE | rules eval FILE --text "..." [--threshold T] [--backend NAME]
  backends check [--backends-file FILE]   call every model backend once
  hash FILE                  print md5, sha1 and pdq of a file (for building hash lists)
  hashlists import --name N --kind md5|sha1|pdq FILE
  hashlists list [--json] | hashlists delete NAME

Run 'contenteval COMMAND -h' for the flags of a command.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, envOS)
	stop()
	os.Exit(code)
}

// run executes one command and returns the exit code: 0 success, 1 failure,
// 2 usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "rules":
		return runRules(ctx, rest, stdout, stderr, getenv)
	case "backends":
		return runBackends(ctx, rest, stdout, stderr, getenv)
	case "hash":
		return runHash(ctx, rest, stdout, stderr)
	case "hashlists":
		return runHashlists(ctx, rest, stdout, stderr, getenv)
	case "serve":
		return runServe(ctx, rest, stdout, stderr, getenv)
	case "migrate", "accounts", "keys":
		return runAdmin(ctx, cmd, rest, stdout, stderr, getenv)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "contenteval: unknown command %q\n%s", cmd, usage)
	return 2
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	resolve := bindConfig(fs, true, getenv)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := resolve()
	if err != nil {
		fmt.Fprintln(stderr, "contenteval serve:", err)
		return 2
	}
	m := &Main{Config: cfg, Stdout: stdout, Stderr: stderr}
	if err := serve(ctx, m); err != nil {
		fmt.Fprintln(stderr, "contenteval serve:", err)
		return 1
	}
	return 0
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
	if err := m.OCR.Available(); err != nil {
		m.Log.Warn("OCR disabled", "reason", err.Error())
	}
	if m.Config.Role != "worker" {
		if err := m.Listen(); err != nil {
			return err
		}
	}
	return m.Serve(ctx)
}

// runAdmin runs the commands that only need the database.
func runAdmin(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	sub := ""
	if cmd != "migrate" {
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "contenteval %s: missing subcommand\n%s", cmd, usage)
			return 2
		}
		sub, args = args[0], args[1:]
	}
	name := strings.TrimSpace(cmd + " " + sub)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	resolve := bindConfig(fs, false, getenv)
	asJSON := fs.Bool("json", false, "print exactly one JSON object on stdout")
	var (
		nameFlag  = new(string)
		typeFlag  = new(string)
		account   = new(string)
		ttl       = new(time.Duration)
		rps       = new(float64)
		burst     = new(int)
		perDay    = new(int64)
		setLimits = map[string]bool{}
	)
	switch name {
	case "accounts create":
		fs.StringVar(nameFlag, "name", "", "account name (required)")
		fs.StringVar(typeFlag, "type", string(domain.AccountLabelFirst), "label-first or policy-first")
	case "accounts set-limits":
		fs.Float64Var(rps, "rps", 0, "requests per second (0: server default)")
		fs.IntVar(burst, "burst", 0, "burst (0: server default)")
		fs.Int64Var(perDay, "evaluations-per-day", 0, "daily evaluation quota (0: unlimited)")
	case "keys create":
		fs.StringVar(account, "account", "", "account id (required)")
		fs.DurationVar(ttl, "ttl", 0, "lifetime, e.g. 720h (0: no expiry)")
		fs.StringVar(nameFlag, "name", "", "a name to recognise the key by")
	case "keys list":
		fs.StringVar(account, "account", "", "account id (required)")
	case "migrate", "accounts list", "accounts set-type", "accounts webhook-secret", "keys revoke":
	default:
		fmt.Fprintf(stderr, "contenteval: unknown command %q\n%s", name, usage)
		return 2
	}
	// Flags may come after positional arguments (accounts set-type ID T --json).
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	fs.Visit(func(f *flag.Flag) { setLimits[f.Name] = true })
	cfg, err := resolve()
	if err != nil {
		fmt.Fprintf(stderr, "contenteval %s: %v\n", name, err)
		return 2
	}
	m := &Main{Config: cfg, Stdout: stdout, Stderr: stderr}
	// Every command migrates: a CLI run on a fresh data dir must work.
	if err := m.Open(ctx, true); err != nil {
		fmt.Fprintf(stderr, "contenteval %s: %v\n", name, err)
		return 1
	}
	defer m.Close()
	out := &printer{w: stdout, json: *asJSON}
	err = func() error {
		switch name {
		case "migrate":
			out.line("migrations applied")
			return nil
		case "accounts create":
			if *nameFlag == "" {
				return usageError("--name is required")
			}
			a, err := createAccount(ctx, m, *nameFlag, domain.AccountType(*typeFlag))
			if err != nil {
				return err
			}
			return out.object(map[string]any{"accountId": a.ID, "name": a.Name, "type": a.Type},
				fmt.Sprintf("created account %s (%s, %s)", a.ID, a.Name, a.Type))
		case "accounts list":
			as, err := m.Accounts.ListAccounts(ctx)
			if err != nil {
				return err
			}
			list := make([]map[string]any, 0, len(as))
			text := ""
			for _, a := range as {
				list = append(list, map[string]any{"accountId": a.ID, "name": a.Name, "type": a.Type})
				text += fmt.Sprintf("%s\t%s\t%s\n", a.ID, a.Type, a.Name)
			}
			return out.object(map[string]any{"accounts": list}, strings.TrimSuffix(text, "\n"))
		case "accounts set-type":
			if len(positional) != 2 {
				return usageError("want: accounts set-type ID TYPE")
			}
			t := domain.AccountType(positional[1])
			if !t.Valid() {
				return fmt.Errorf("type %q is not label-first or policy-first", positional[1])
			}
			a, err := m.Accounts.UpdateAccount(ctx, positional[0], func(a *domain.Account) error { a.Type = t; return nil })
			if err != nil {
				return err
			}
			return out.object(map[string]any{"accountId": a.ID, "name": a.Name, "type": a.Type}, fmt.Sprintf("account %s is now %s", a.ID, a.Type))
		case "accounts set-limits":
			if len(positional) != 1 {
				return usageError("want: accounts set-limits ID [--rps R] [--burst B] [--evaluations-per-day N]")
			}
			if *rps < 0 || *burst < 0 || *perDay < 0 {
				return errors.New("limits must not be negative")
			}
			a, err := m.Accounts.UpdateAccount(ctx, positional[0], func(a *domain.Account) error {
				if setLimits["rps"] {
					a.Limits.RequestsPerSecond = *rps
				}
				if setLimits["burst"] {
					a.Limits.Burst = *burst
				}
				if setLimits["evaluations-per-day"] {
					a.Limits.EvaluationsPerDay = *perDay
				}
				return nil
			})
			if err != nil {
				return err
			}
			return out.object(map[string]any{"accountId": a.ID, "rps": a.Limits.RequestsPerSecond, "burst": a.Limits.Burst, "evaluationsPerDay": a.Limits.EvaluationsPerDay},
				fmt.Sprintf("account %s: rps %g, burst %d, evaluations per day %d (0 = default/unlimited)", a.ID, a.Limits.RequestsPerSecond, a.Limits.Burst, a.Limits.EvaluationsPerDay))
		case "accounts webhook-secret":
			if len(positional) != 1 {
				return usageError("want: accounts webhook-secret ID")
			}
			a, err := m.Accounts.UpdateAccount(ctx, positional[0], func(a *domain.Account) error {
				if a.WebhookSecret == "" {
					a.WebhookSecret = newWebhookSecret()
				}
				return nil
			})
			if err != nil {
				return err
			}
			return out.object(map[string]any{"secret": a.WebhookSecret}, a.WebhookSecret)
		case "keys create":
			if *account == "" {
				return usageError("--account is required")
			}
			k, token, err := m.Keys.Issue(ctx, *account, *nameFlag, *ttl)
			if err != nil {
				return err
			}
			var exp any
			if k.ExpiresAt != nil {
				exp = k.ExpiresAt.Format(time.RFC3339)
			}
			return out.object(map[string]any{"keyId": k.ID, "token": token, "expiresAt": exp}, token)
		case "keys list":
			if *account == "" {
				return usageError("--account is required")
			}
			if _, err := m.Accounts.GetAccount(ctx, *account); err != nil {
				return err
			}
			ks, err := persistenceKeys(m).ListKeys(ctx, *account)
			if err != nil {
				return err
			}
			list := make([]map[string]any, 0, len(ks))
			text := ""
			for _, k := range ks {
				item := map[string]any{"keyId": k.ID, "name": k.Name, "created": k.Created.Format(time.RFC3339), "expiresAt": nil, "revokedAt": nil}
				state := "active"
				if k.ExpiresAt != nil {
					item["expiresAt"] = k.ExpiresAt.Format(time.RFC3339)
				}
				if k.RevokedAt != nil {
					item["revokedAt"] = k.RevokedAt.Format(time.RFC3339)
					state = "revoked"
				}
				list = append(list, item)
				text += fmt.Sprintf("%s\t%s\t%s\t%s\n", k.ID, state, k.Created.Format(time.RFC3339), k.Name)
			}
			return out.object(map[string]any{"keys": list}, strings.TrimSuffix(text, "\n"))
		case "keys revoke":
			if len(positional) != 1 {
				return usageError("want: keys revoke KEY_ID")
			}
			k, err := m.Keys.Revoke(ctx, positional[0])
			if err != nil {
				return err
			}
			return out.object(map[string]any{"keyId": k.ID, "revokedAt": k.RevokedAt.Format(time.RFC3339)}, "revoked "+k.ID)
		}
		return nil
	}()
	return exitCode(stderr, name, err)
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

// parseInterspersed parses flags wherever they stand among the arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
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
