package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/precheck"
	"github.com/google/uuid"
)

// newPrecheck builds the precheck service over the database of m.
func newPrecheck(m *Main) (*precheck.Service, error) {
	return precheck.NewService(persistence.NewHashLists(m.DB), precheck.Config{
		Bands:        imaging.Bands{High: m.Config.PDQHigh, Medium: m.Config.PDQMedium, Low: m.Config.PDQLow},
		Limits:       imaging.Limits{MaxBytes: m.Config.ImageMaxBytes},
		DecodeBudget: imaging.NewBudget(m.Config.ImageDecodeBudget),
	}, m.Clock, uuid.NewString, m.Log)
}

// runHashlists: hashlists import --name N --kind md5|sha1|pdq FILE,
// hashlists list, hashlists delete NAME. Running servers pick changes up
// without a restart (they poll the lists' generation).
func runHashlists(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, "usage: contenteval hashlists import --name N --kind md5|sha1|pdq FILE | list | delete NAME")
		return 2
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("hashlists "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	resolve := bindConfig(fs, false, getenv)
	asJSON := fs.Bool("json", false, "print exactly one JSON object on stdout")
	name := fs.String("name", "", "list name (import)")
	kind := fs.String("kind", "", "md5, sha1 or pdq (import)")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	cfg, err := resolve()
	if err != nil {
		fmt.Fprintf(stderr, "contenteval hashlists %s: %v\n", sub, err)
		return 2
	}
	m := &Main{Config: cfg, Stdout: stdout, Stderr: stderr}
	if err := m.Open(ctx, true); err != nil {
		fmt.Fprintf(stderr, "contenteval hashlists %s: %v\n", sub, err)
		return 1
	}
	defer m.Close()
	svc, err := newPrecheck(m)
	if err != nil {
		fmt.Fprintf(stderr, "contenteval hashlists %s: %v\n", sub, err)
		return 2
	}
	out := &printer{w: stdout, json: *asJSON}
	err = func() error {
		switch sub {
		case "import":
			if *name == "" || *kind == "" || len(positional) != 1 {
				return usageError("want: hashlists import --name N --kind md5|sha1|pdq FILE")
			}
			k, err := imaging.ParseKind(*kind)
			if err != nil {
				return usageError(err.Error())
			}
			f, err := os.Open(positional[0])
			if err != nil {
				return err
			}
			defer f.Close()
			l, err := svc.Import(ctx, *name, k, f)
			if err != nil {
				return err
			}
			return out.object(map[string]any{"name": l.Name, "kind": l.Kind, "count": l.Count},
				fmt.Sprintf("imported %d %s hashes into list %s", l.Count, l.Kind, l.Name))
		case "list":
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
		case "delete":
			if len(positional) != 1 {
				return usageError("want: hashlists delete NAME")
			}
			if err := svc.Delete(ctx, positional[0]); err != nil {
				return err
			}
			return out.object(map[string]any{"name": positional[0], "deleted": true}, "deleted "+positional[0])
		}
		return usageError(fmt.Sprintf("unknown subcommand %q", sub))
	}()
	return exitCode(stderr, "hashlists "+sub, err)
}

func persistenceHashLists(m *Main) *persistence.HashLists { return persistence.NewHashLists(m.DB) }
