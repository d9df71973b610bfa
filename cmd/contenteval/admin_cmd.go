package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/spf13/cobra"
)

// adminCommand is a command that only needs the database: the common
// settings, --json, the flags flags adds, and a body run on the opened
// database (migrated first: a CLI run on a fresh data dir must work).
func (c *command) adminCommand(use, short string, args cobra.PositionalArgs, flags func(fs *flag.FlagSet),
	body func(cmd *cobra.Command, m *Main, out *printer, args []string) error) *cobra.Command {
	fs := newFlagSet(use)
	resolve := bindConfig(fs, false, c.getenv)
	asJSON := fs.Bool("json", false, "print exactly one JSON object on stdout")
	if flags != nil {
		flags(fs)
	}
	cmd := &cobra.Command{Use: use, Short: short, Args: args}
	cmd.RunE = c.action(func(cmd *cobra.Command, args []string) int {
		name := strings.TrimPrefix(cmd.CommandPath(), "contenteval ")
		cfg, err := resolve()
		if err != nil {
			fmt.Fprintf(c.stderr, "contenteval %s: %v\n", name, err)
			return 2
		}
		m := &Main{Config: cfg, Stdout: c.stdout, Stderr: c.stderr}
		if err := m.Open(c.ctx, true); err != nil {
			fmt.Fprintf(c.stderr, "contenteval %s: %v\n", name, err)
			return 1
		}
		defer m.Close()
		return exitCode(c.stderr, name, body(cmd, m, &printer{w: c.stdout, json: *asJSON}, args))
	})
	return withGoFlags(cmd, fs)
}

func (c *command) migrateCommand() *cobra.Command {
	return c.adminCommand("migrate", "apply database migrations and exit", cobra.NoArgs, nil,
		func(_ *cobra.Command, _ *Main, out *printer, _ []string) error {
			out.line("migrations applied")
			return nil
		})
}

func (c *command) accountsCommand() *cobra.Command {
	var name, typ string
	var set accountSettings
	var rps float64
	var burst int
	var perDay int64
	return c.group("accounts", "create, list and change accounts",
		c.adminCommand("create --name N [--type label-first|policy-first]", "create an account", cobra.NoArgs,
			func(fs *flag.FlagSet) {
				fs.StringVar(&name, "name", "", "account name (required)")
				fs.StringVar(&typ, "type", string(domain.AccountLabelFirst), "label-first or policy-first")
			},
			func(cmd *cobra.Command, m *Main, out *printer, _ []string) error {
				if name == "" {
					return usageError("--name is required")
				}
				a, err := createAccount(cmd.Context(), m, name, domain.AccountType(typ))
				if err != nil {
					return err
				}
				return out.object(map[string]any{"accountId": a.ID, "name": a.Name, "type": a.Type},
					fmt.Sprintf("created account %s (%s, %s)", a.ID, a.Name, a.Type))
			}),
		c.adminCommand("list", "list the accounts", cobra.NoArgs, nil, listAccounts),
		c.adminCommand("set-type ID TYPE", "make an account label-first or policy-first", exactArgs(2, "accounts set-type ID TYPE"), nil, setAccountType),
		c.adminCommand("set-limits ID [--rps R] [--burst B] [--evaluations-per-day N]", "set an account's rate limit and daily quota",
			exactArgs(1, "accounts set-limits ID [--rps R] [--burst B] [--evaluations-per-day N]"),
			func(fs *flag.FlagSet) {
				fs.Float64Var(&rps, "rps", 0, "requests per second (0: server default)")
				fs.IntVar(&burst, "burst", 0, "burst (0: server default)")
				fs.Int64Var(&perDay, "evaluations-per-day", 0, "daily evaluation quota (0: unlimited)")
			},
			func(cmd *cobra.Command, m *Main, out *printer, args []string) error {
				return setAccountLimits(cmd, m, out, args[0], rps, burst, perDay)
			}),
		c.adminCommand("set ID [--retention D] [--moderation-policy KEY] [--moderation-tag NAME]",
			"set an account's history retention (30d, 12h, 90s; 0: the server's --retention) or its default moderation policy or tag", cobra.ArbitraryArgs,
			func(fs *flag.FlagSet) {
				fs.StringVar(&set.retention, "retention", "", "the account's retention of its history when shorter than the server's (30d, 12h, 90s; 0: the server's)")
				fs.StringVar(&set.moderationPolicy, "moderation-policy", "", "policyKey that POST /v1/moderations evaluates for OpenAI's model names (policy-first; empty: none)")
				fs.StringVar(&set.moderationTag, "moderation-tag", "", "label tag whose labels POST /v1/moderations evaluates for OpenAI's model names (label-first; empty: none)")
			},
			func(cmd *cobra.Command, m *Main, out *printer, args []string) error {
				given := map[string]bool{}
				for _, f := range []string{"retention", "moderation-policy", "moderation-tag"} {
					given[f] = cmd.Flags().Changed(f)
				}
				return setAccount(cmd.Context(), m, out, args, given, set)
			}),
		c.adminCommand("webhook-secret ID", "print an account's webhook signing secret (created on first use)", exactArgs(1, "accounts webhook-secret ID"), nil, webhookSecret),
	)
}

func (c *command) keysCommand() *cobra.Command {
	var account, name, role string
	var ttl time.Duration
	return c.group("keys", "issue, list and revoke API keys",
		c.adminCommand("create --account ID [--role admin|api|reviewer] [--ttl 720h] [--name N]", "issue an API key", cobra.NoArgs,
			func(fs *flag.FlagSet) {
				fs.StringVar(&account, "account", "", "account id (required)")
				fs.StringVar(&role, "role", string(domain.RoleAdmin), "what the key may call: admin (everything), api (evaluation and reads) or reviewer (review endpoints)")
				fs.DurationVar(&ttl, "ttl", 0, "lifetime, e.g. 720h (0: no expiry)")
				fs.StringVar(&name, "name", "", "a name to recognise the key by (signed into the key)")
			},
			func(cmd *cobra.Command, m *Main, out *printer, _ []string) error {
				if account == "" {
					return usageError("--account is required")
				}
				if !domain.KeyRole(role).Valid() {
					return usageError(fmt.Sprintf("--role %q is not admin, api or reviewer", role))
				}
				k, token, err := m.Keys.IssueRole(cmd.Context(), account, name, domain.KeyRole(role), ttl)
				if err != nil {
					return err
				}
				var exp any
				if k.ExpiresAt != nil {
					exp = k.ExpiresAt.Format(time.RFC3339)
				}
				return out.object(map[string]any{"keyId": k.ID, "token": token, "role": k.Role, "name": k.Name, "expiresAt": exp}, token)
			}),
		c.adminCommand("list --account ID", "list an account's keys", cobra.NoArgs,
			func(fs *flag.FlagSet) { fs.StringVar(&account, "account", "", "account id (required)") },
			func(cmd *cobra.Command, m *Main, out *printer, _ []string) error {
				return listKeys(cmd, m, out, account)
			}),
		c.adminCommand("revoke KEY_ID", "revoke an API key", exactArgs(1, "keys revoke KEY_ID"), nil,
			func(cmd *cobra.Command, m *Main, out *printer, args []string) error {
				k, err := m.Keys.Revoke(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return out.object(map[string]any{"keyId": k.ID, "revokedAt": k.RevokedAt.Format(time.RFC3339)}, "revoked "+k.ID)
			}),
	)
}

// exactArgs wants n positional arguments, as usage shows them.
func exactArgs(n int, usage string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return errors.New("want: " + usage)
		}
		return nil
	}
}

func listAccounts(cmd *cobra.Command, m *Main, out *printer, _ []string) error {
	as, err := m.Accounts.ListAccounts(cmd.Context())
	if err != nil {
		return err
	}
	list := make([]map[string]any, 0, len(as))
	var text strings.Builder
	for _, a := range as {
		list = append(list, map[string]any{"accountId": a.ID, "name": a.Name, "type": a.Type, "retentionDays": retentionDays(a.Retention)})
		fmt.Fprintf(&text, "%s\t%s\t%s\n", a.ID, a.Type, a.Name)
	}
	return out.object(map[string]any{"accounts": list}, strings.TrimSuffix(text.String(), "\n"))
}

func setAccountType(cmd *cobra.Command, m *Main, out *printer, args []string) error {
	t := domain.AccountType(args[1])
	if !t.Valid() {
		return fmt.Errorf("type %q is not label-first or policy-first", args[1])
	}
	a, err := m.Accounts.UpdateAccount(cmd.Context(), args[0], func(a *domain.Account) error { a.Type = t; return nil })
	if err != nil {
		return err
	}
	return out.object(map[string]any{"accountId": a.ID, "name": a.Name, "type": a.Type}, fmt.Sprintf("account %s is now %s", a.ID, a.Type))
}

// setAccountLimits changes only the limits given as flags.
func setAccountLimits(cmd *cobra.Command, m *Main, out *printer, id string, rps float64, burst int, perDay int64) error {
	if rps < 0 || burst < 0 || perDay < 0 {
		return errors.New("limits must not be negative")
	}
	given := cmd.Flags().Changed
	a, err := m.Accounts.UpdateAccount(cmd.Context(), id, func(a *domain.Account) error {
		if given("rps") {
			a.Limits.RequestsPerSecond = rps
		}
		if given("burst") {
			a.Limits.Burst = burst
		}
		if given("evaluations-per-day") {
			a.Limits.EvaluationsPerDay = perDay
		}
		return nil
	})
	if err != nil {
		return err
	}
	return out.object(map[string]any{"accountId": a.ID, "rps": a.Limits.RequestsPerSecond, "burst": a.Limits.Burst, "evaluationsPerDay": a.Limits.EvaluationsPerDay},
		fmt.Sprintf("account %s: rps %g, burst %d, evaluations per day %d (0 = default/unlimited)", a.ID, a.Limits.RequestsPerSecond, a.Limits.Burst, a.Limits.EvaluationsPerDay))
}

func webhookSecret(cmd *cobra.Command, m *Main, out *printer, args []string) error {
	a, err := m.Accounts.UpdateAccount(cmd.Context(), args[0], func(a *domain.Account) error {
		if a.WebhookSecret == "" {
			a.WebhookSecret = newWebhookSecret()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return out.object(map[string]any{"secret": a.WebhookSecret}, a.WebhookSecret)
}

func listKeys(cmd *cobra.Command, m *Main, out *printer, account string) error {
	if account == "" {
		return usageError("--account is required")
	}
	if _, err := m.Accounts.GetAccount(cmd.Context(), account); err != nil {
		return err
	}
	ks, err := persistenceKeys(m).ListKeys(cmd.Context(), account)
	if err != nil {
		return err
	}
	list := make([]map[string]any, 0, len(ks))
	var text strings.Builder
	for _, k := range ks {
		item := map[string]any{"keyId": k.ID, "name": k.Name, "role": k.Role, "created": k.Created.Format(time.RFC3339), "expiresAt": nil, "revokedAt": nil}
		state := "active"
		if k.ExpiresAt != nil {
			item["expiresAt"] = k.ExpiresAt.Format(time.RFC3339)
		}
		if k.RevokedAt != nil {
			item["revokedAt"] = k.RevokedAt.Format(time.RFC3339)
			state = "revoked"
		}
		list = append(list, item)
		fmt.Fprintf(&text, "%s\t%s\t%s\t%s\t%s\n", k.ID, state, k.Role, k.Created.Format(time.RFC3339), k.Name)
	}
	return out.object(map[string]any{"keys": list}, strings.TrimSuffix(text.String(), "\n"))
}
