package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain/hashlists"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/precheck"
	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// newPrecheck builds the precheck service over the database of m.
func newPrecheck(m *Main) (*precheck.Service, error) {
	cfg := precheck.Config{
		Bands:        imaging.Bands{High: m.Config.PDQHigh, Medium: m.Config.PDQMedium, Low: m.Config.PDQLow},
		Limits:       imaging.Limits{MaxBytes: m.Config.ImageMaxBytes},
		DecodeBudget: imaging.NewBudget(m.Config.ImageDecodeBudget),
	}
	if m.Registry != nil {
		cfg.Registerer = m.Registry
	}
	return precheck.NewService(persistence.NewHashLists(m.DB), cfg, m.Clock, uuid.NewString, m.Log)
}

// hashListPoll is how often a server looks for hash-list changes made by
// other processes (the CLI, other replicas): one indexed read of a counter.
const hashListPoll = 2 * time.Second

// newHashListService serves the accounts' lists; a change made through it
// reloads this process's precheck at once.
func newHashListService(m *Main, pc *precheck.Service) *hashlists.Service {
	return hashlists.NewService(persistence.NewHashLists(m.DB), m.Clock, uuid.NewString, pc.DefaultBands(), func(ctx context.Context) {
		if err := pc.Reload(context.WithoutCancel(ctx)); err != nil && m.Log != nil {
			m.Log.Warn("reloading hash lists", "error", err.Error())
		}
	})
}

// hashlistsCommand: hashlists import --name N --kind md5|sha1|pdq FILE,
// hashlists list, hashlists delete NAME. Running servers pick changes up
// without a restart (they poll the lists' generation).
func (c *command) hashlistsCommand() *cobra.Command {
	sub := func(use, short string, args cobra.PositionalArgs, body func(ctx context.Context, svc *precheck.Service, out *printer, name, kind string, args []string) error) *cobra.Command {
		var name, kind string
		return c.adminCommand(use, short, args,
			func(fs *flag.FlagSet) {
				fs.StringVar(&name, "name", "", "list name (import)")
				fs.StringVar(&kind, "kind", "", "md5, sha1 or pdq (import)")
			},
			func(cmd *cobra.Command, m *Main, out *printer, args []string) error {
				svc, err := newPrecheck(m)
				if err != nil {
					return usageError(err.Error())
				}
				return body(cmd.Context(), svc, out, name, kind, args)
			})
	}
	verbs := []*cobra.Command{sub("import --name N --kind md5|sha1|pdq FILE", "import a file of hashes (one per line) as a list", cobra.ArbitraryArgs, importHashList),
		sub("list", "list the hash lists", cobra.NoArgs, listHashLists),
		sub("delete NAME", "delete a hash list", exactArgs(1, "hashlists delete NAME"),
			func(ctx context.Context, svc *precheck.Service, out *printer, _, _ string, args []string) error {
				if err := svc.Delete(ctx, args[0]); err != nil {
					return err
				}
				return out.object(map[string]any{"name": args[0], "deleted": true}, "deleted "+args[0])
			})}
	return c.group("hashlists", "manage the operator-wide hash lists of the precheck (they apply to every account)",
		append(verbs, c.hashListVerbs()...)...)
}

func importHashList(ctx context.Context, svc *precheck.Service, out *printer, name, kind string, args []string) error {
	if name == "" || kind == "" || len(args) != 1 {
		return usageError("want: hashlists import --name N --kind md5|sha1|pdq FILE")
	}
	k, err := imaging.ParseKind(kind)
	if err != nil {
		return usageError(err.Error())
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	l, err := svc.Import(ctx, name, k, f)
	if err != nil {
		return err
	}
	return out.object(map[string]any{"name": l.Name, "kind": l.Kind, "count": l.Count},
		fmt.Sprintf("imported %d %s hashes into list %s", l.Count, l.Kind, l.Name))
}

func listHashLists(ctx context.Context, svc *precheck.Service, out *printer, _, _ string, _ []string) error {
	ls, err := svc.List(ctx)
	if err != nil {
		return err
	}
	items := make([]map[string]any, 0, len(ls))
	var text strings.Builder
	for _, l := range ls {
		items = append(items, map[string]any{"name": l.Name, "kind": l.Kind, "count": l.Count, "created": l.Created.Format(time.RFC3339)})
		fmt.Fprintf(&text, "%s\t%s\t%d\t%s\n", l.Name, l.Kind, l.Count, l.Created.Format(time.RFC3339))
	}
	return out.object(map[string]any{"hashLists": items}, strings.TrimSuffix(text.String(), "\n"))
}

func persistenceHashLists(m *Main) *persistence.HashLists { return persistence.NewHashLists(m.DB) }
