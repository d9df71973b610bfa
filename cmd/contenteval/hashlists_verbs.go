package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/hashlists"
	"github.com/contenteval/contenteval/persistence"
	"github.com/google/uuid"
	"github.com/spf13/cobra"
)

// The verbs of the hash-list API for the operator-wide lists:
//
//	hashlists create --name N --kind K [--mode M] [--bands E,H,M,L] [--flood-limit N]
//	hashlists update NAME [--rename N] [--mode M] [--bands E,H,M,L] [--flood-limit N]
//	hashlists add NAME HASH[,SOURCE[,NOTE]]...
//	hashlists add-file NAME [--format lines|hma] FILE
//	hashlists hashes NAME
//	hashlists remove|disable|enable|confirm NAME HASH
//
// Lists are named; they apply to every account.

// listOpts are the flags of create and update.
type listOpts struct {
	name, kind, mode, bands, rename, format string
	flood                                   int
}

func (o *listOpts) flags(fs *flag.FlagSet) {
	fs.StringVar(&o.name, "name", "", "list name (create)")
	fs.StringVar(&o.kind, "kind", "", "md5, sha1 or pdq (create)")
	fs.StringVar(&o.mode, "mode", "", "enforce, shadow or allow")
	fs.StringVar(&o.bands, "bands", "", "PDQ distances of EXACT,HIGH,MEDIUM,LOW (exact -1: none)")
	fs.StringVar(&o.rename, "rename", "", "new name (update)")
	fs.StringVar(&o.format, "format", "lines", "lines, or hma: the signal CSV of threatexchange dataset --csv (add-file)")
	fs.IntVar(&o.flood, "flood-limit", 0, "distinct contents a hash may match in an hour before it is quarantined")
}

func parseMode(s string) (*domain.HashListMode, error) {
	if s == "" {
		return nil, nil
	}
	m := domain.HashListMode("HASH_LIST_MODE_" + strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "HASH_LIST_MODE_")))
	switch m {
	case domain.HashListEnforce, domain.HashListShadow, domain.HashListAllow:
		return &m, nil
	}
	return nil, usageError("--mode: want enforce, shadow or allow")
}

func parseBands(s string) (*domain.HashBands, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return nil, usageError("--bands: want EXACT,HIGH,MEDIUM,LOW")
	}
	var v [4]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, usageError("--bands: want four integers")
		}
		v[i] = n
	}
	b := domain.HashBands{Exact: v[0], High: v[1], Medium: v[2], Low: v[3]}
	if err := hashlists.ValidateBands(b); err != nil {
		return nil, usageError("--bands: " + err.Error())
	}
	return &b, nil
}

func operatorHashLists(m *Main) (*hashlists.Service, error) {
	pc, err := newPrecheck(m)
	if err != nil {
		return nil, usageError(err.Error())
	}
	return hashlists.NewService(persistence.NewHashLists(m.DB), m.Clock, uuid.NewString, pc.DefaultBands(), nil), nil
}

func listObject(l *domain.HashList) map[string]any {
	o := map[string]any{"id": l.ID, "name": l.Name, "kind": l.Kind, "mode": l.Mode, "floodLimit": l.FloodLimit, "count": l.Count}
	if l.Bands != nil {
		o["bands"] = []int{l.Bands.Exact, l.Bands.High, l.Bands.Medium, l.Bands.Low}
	}
	return o
}

// hashListVerbs are the subcommands of `hashlists` beside import, list and
// delete.
func (c *command) hashListVerbs() []*cobra.Command {
	return []*cobra.Command{
		c.hashListVerb("create --name N --kind md5|sha1|pdq", "create an empty operator-wide list", cobra.NoArgs, hashListCreate),
		c.hashListVerb("update NAME", "change the mode, bands, flood limit or name of a list", exactArgs(1, "hashlists update NAME"), hashListUpdate),
		c.hashListVerb("add NAME HASH[,SOURCE[,NOTE]]...", "add hashes to a list", cobra.MinimumNArgs(2), hashListAdd),
		c.hashListVerb("add-file NAME [--format lines|hma] FILE", "add the hashes of a file to a list, all or none", exactArgs(2, "hashlists add-file NAME FILE"), hashListAddFile),
		c.hashListVerb("hashes NAME", "list the hashes of a list with their state and match counts", exactArgs(1, "hashlists hashes NAME"), hashListHashes),
		c.hashListVerb("remove NAME HASH", "remove one hash from a list", exactArgs(2, "hashlists remove NAME HASH"), hashListRemove),
		c.hashListState(hashlists.ActionDisable), c.hashListState(hashlists.ActionEnable), c.hashListState(hashlists.ActionConfirm),
	}
}

// hashListBody is what a `hashlists` verb does with the operator's lists.
type hashListBody func(ctx context.Context, svc *hashlists.Service, out *printer, o *listOpts, args []string) error

// hashListVerb is an admin command running body on the operator's lists.
func (c *command) hashListVerb(use, short string, args cobra.PositionalArgs, body hashListBody) *cobra.Command {
	o := &listOpts{}
	return c.adminCommand(use, short, args, o.flags, func(cmd *cobra.Command, m *Main, out *printer, args []string) error {
		svc, err := operatorHashLists(m)
		if err != nil {
			return err
		}
		return body(cmd.Context(), svc, out, o, args)
	})
}

// hashListState is the verb that disables, enables or confirms one hash.
func (c *command) hashListState(action string) *cobra.Command {
	return c.hashListVerb(action+" NAME HASH", action+" one hash of a list", exactArgs(2, "hashlists "+action+" NAME HASH"),
		func(ctx context.Context, svc *hashlists.Service, out *printer, _ *listOpts, args []string) error {
			l, err := svc.OperatorList(ctx, args[0])
			if err != nil {
				return err
			}
			e, err := svc.SetState(ctx, "", l.ID, args[1], action)
			if err != nil {
				return err
			}
			return out.object(map[string]any{"hash": e.Hex, "state": e.State}, fmt.Sprintf("%s %s", e.Hex, e.State))
		})
}

// hashListCreate is `hashlists create`: an empty operator-wide list.
func hashListCreate(ctx context.Context, svc *hashlists.Service, out *printer, o *listOpts, _ []string) error {
	mode, err := parseMode(o.mode)
	if err != nil {
		return err
	}
	b, err := parseBands(o.bands)
	if err != nil {
		return err
	}
	in := hashlists.NewList{Name: o.name, Kind: domain.HashKind(o.kind), Bands: b, FloodLimit: o.flood}
	if mode != nil {
		in.Mode = *mode
	}
	l, err := svc.Create(ctx, "", in)
	if err != nil {
		return err
	}
	return out.object(listObject(l), "created "+l.Name)
}

// hashListUpdate is `hashlists update`: mode, bands, flood limit or name.
func hashListUpdate(ctx context.Context, svc *hashlists.Service, out *printer, o *listOpts, args []string) error {
	l, err := svc.OperatorList(ctx, args[0])
	if err != nil {
		return err
	}
	var p hashlists.Patch
	if p.Mode, err = parseMode(o.mode); err != nil {
		return err
	}
	if p.Bands, err = parseBands(o.bands); err != nil {
		return err
	}
	if o.rename != "" {
		p.Name = &o.rename
	}
	if o.flood != 0 {
		p.FloodLimit = &o.flood
	}
	if l, err = svc.Update(ctx, "", l.ID, p); err != nil {
		return err
	}
	return out.object(listObject(l), "updated "+l.Name)
}

// hashListAdd is `hashlists add`: hashes given as arguments, all or none.
func hashListAdd(ctx context.Context, svc *hashlists.Service, out *printer, _ *listOpts, args []string) error {
	l, err := svc.OperatorList(ctx, args[0])
	if err != nil {
		return err
	}
	var hs []hashlists.NewHash
	err = hashlists.ParseLines(strings.NewReader(strings.Join(args[1:], "\n")), l.Kind, func(h hashlists.NewHash) error {
		hs = append(hs, h)
		return nil
	})
	if err != nil {
		return usageError(err.Error())
	}
	l, n, err := svc.Add(ctx, "", l.ID, hs)
	if err != nil {
		return err
	}
	return out.object(listObject(l), fmt.Sprintf("added %d hashes to %s (%d in all)", n, l.Name, l.Count))
}

// hashListAddFile is `hashlists add-file`: a file of hashes, all or none.
func hashListAddFile(ctx context.Context, svc *hashlists.Service, out *printer, o *listOpts, args []string) error {
	l, err := svc.OperatorList(ctx, args[0])
	if err != nil {
		return err
	}
	f, err := os.Open(args[1])
	if err != nil {
		return err
	}
	defer f.Close()
	format := hashlists.FormatLines
	if strings.EqualFold(o.format, "hma") {
		format = hashlists.FormatHMA
	}
	res, err := svc.Import(ctx, "", l.ID, format, f)
	if err != nil {
		return err
	}
	obj := listObject(res.List)
	obj["skipped"] = res.Skipped
	return out.object(obj, fmt.Sprintf("added %d hashes to %s (%d in all; %d rows of other signal types skipped)", res.Added, res.List.Name, res.List.Count, res.Skipped))
}

// hashListHashes is `hashlists hashes`: every hash with its state and counts.
func hashListHashes(ctx context.Context, svc *hashlists.Service, out *printer, _ *listOpts, args []string) error {
	l, err := svc.OperatorList(ctx, args[0])
	if err != nil {
		return err
	}
	var items []map[string]any
	var text strings.Builder
	for after := ""; ; {
		es, err := svc.Hashes(ctx, "", l.ID, after, 1000)
		if err != nil {
			return err
		}
		for _, e := range es {
			items = append(items, map[string]any{"hash": e.Hex, "state": e.State, "matchCount": e.MatchCount, "source": e.Source, "note": e.Note})
			fmt.Fprintf(&text, "%s\t%s\t%d\t%s\t%s\n", e.Hex, e.State, e.MatchCount, e.Source, e.Note)
		}
		if len(es) < 1000 {
			break
		}
		after = es[len(es)-1].Hex
	}
	return out.object(map[string]any{"hashes": items}, strings.TrimSuffix(text.String(), "\n"))
}

// hashListRemove is `hashlists remove`: one hash out of a list.
func hashListRemove(ctx context.Context, svc *hashlists.Service, out *printer, _ *listOpts, args []string) error {
	l, err := svc.OperatorList(ctx, args[0])
	if err != nil {
		return err
	}
	if err := svc.DeleteHash(ctx, "", l.ID, args[1]); err != nil {
		return err
	}
	return out.object(map[string]any{"hash": args[1], "removed": true}, "removed "+args[1])
}
