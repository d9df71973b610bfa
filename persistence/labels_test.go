package persistence_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/persistence"
	"github.com/contenteval/contenteval/persistence/persistencetest"
)

// labelFixture is a database with two accounts and the label stores.
type labelFixture struct {
	labels   *persistence.Labels
	tags     *persistence.LabelTags
	versions *persistence.LabelVersions
	a, b     string // account ids
	n        int
}

func newLabelFixture(t *testing.T, db *persistence.DB) *labelFixture {
	t.Helper()
	accounts := persistence.NewAccounts(db)
	for _, id := range []string{"acct-a", "acct-b"} {
		require.NoError(t, accounts.CreateAccount(t.Context(), newAccount(id, t0)))
	}
	return &labelFixture{
		labels: persistence.NewLabels(db), tags: persistence.NewLabelTags(db), versions: persistence.NewLabelVersions(db),
		a: "acct-a", b: "acct-b",
	}
}

// label returns a new label of account at created t0 + n seconds.
func (f *labelFixture) label(account, name, policy string) *domain.Label {
	f.n++
	at := t0.Add(time.Duration(f.n) * time.Second)
	return &domain.Label{ID: fmt.Sprintf("label-%03d", f.n), AccountID: account, Name: name, PolicyID: policy, Created: at, Updated: at}
}

func (f *labelFixture) create(t *testing.T, account, name, policy string, tags ...string) *domain.Label {
	t.Helper()
	l := f.label(account, name, policy)
	require.NoError(t, f.labels.CreateLabel(t.Context(), l, tags))
	return l
}

func (f *labelFixture) tag(t *testing.T, account, name string) *domain.LabelTag {
	t.Helper()
	f.n++
	tg := &domain.LabelTag{ID: fmt.Sprintf("tag-%03d", f.n), AccountID: account, Name: name, Color: "red", Created: t0, Updated: t0}
	require.NoError(t, f.tags.CreateLabelTag(t.Context(), tg, 1000))
	return tg
}

func (f *labelFixture) version(account, labelID string) *domain.LabelVersion {
	f.n++
	return &domain.LabelVersion{
		ID: fmt.Sprintf("version-%03d", f.n), LabelID: labelID, AccountID: account, Text: `=("x")`,
		Created: t0.Add(time.Duration(f.n) * time.Second),
	}
}

func TestLabels_CreateGetUpdate(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		red := f.tag(t, f.a, "red")
		l := f.label(f.a, "Threat", "")
		l.Description = "d"
		require.NoError(t, f.labels.CreateLabel(ctx, l, []string{red.ID}))
		require.Equal(t, persistence.StoredTime(l.Created), l.Created, "times normalized in place")
		require.Len(t, l.Tags, 1)

		got, err := f.labels.GetLabel(ctx, f.a, l.ID)
		require.NoError(t, err)
		require.Equal(t, l, got)
		_, err = f.labels.GetLabel(ctx, f.b, l.ID)
		requireCode(t, err, domain.NotFound)
		_, err = f.labels.GetLabel(ctx, f.a, "nope")
		requireCode(t, err, domain.NotFound)

		upd, err := f.labels.UpdateLabel(ctx, f.a, l.ID, func(x *domain.Label) error {
			x.Name, x.Disabled, x.Updated = "Threats", true, t0.Add(time.Hour)
			x.PolicyID, x.Created = "ignored", t0.Add(time.Hour) // not updatable
			at := t0.Add(time.Hour)
			x.ArchivedAt = &at
			return nil
		})
		require.NoError(t, err)
		got, err = f.labels.GetLabel(ctx, f.a, l.ID)
		require.NoError(t, err)
		require.Equal(t, upd, got)
		require.Equal(t, "Threats", got.Name)
		require.Equal(t, "", got.PolicyID)
		require.Equal(t, l.Created, got.Created)
		require.NotNil(t, got.ArchivedAt)

		// fn's error aborts the update.
		boom := domain.Errorf(domain.FailedPrecondition, "boom")
		_, err = f.labels.UpdateLabel(ctx, f.a, l.ID, func(x *domain.Label) error { x.Name = "zzz"; return boom })
		require.ErrorIs(t, err, boom)
		got, _ = f.labels.GetLabel(ctx, f.a, l.ID)
		require.Equal(t, "Threats", got.Name)
		_, err = f.labels.UpdateLabel(ctx, f.b, l.ID, func(*domain.Label) error { return nil })
		requireCode(t, err, domain.NotFound)
	})
}

// Uniqueness: empty policy ids collide (independent labels), NULL-like
// semantics never let duplicates through, soft-deleted labels free names.
func TestLabels_Uniqueness(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		f.create(t, f.a, "Spam", "")
		requireCode(t, f.labels.CreateLabel(ctx, f.label(f.a, "Spam", ""), nil), domain.AlreadyExists)
		p1 := f.create(t, f.a, "Spam", "p1")
		requireCode(t, f.labels.CreateLabel(ctx, f.label(f.a, "Spam", "p1"), nil), domain.AlreadyExists)
		f.create(t, f.a, "Spam", "p2")
		f.create(t, f.b, "Spam", "")
		x := f.create(t, f.a, "X", "")
		_, err := f.labels.UpdateLabel(ctx, f.a, x.ID, func(l *domain.Label) error { l.Name = "Spam"; return nil })
		requireCode(t, err, domain.AlreadyExists)
		require.Contains(t, domain.ErrorMessage(err), "Spam")

		require.NoError(t, f.labels.DeleteLabel(ctx, f.a, p1.ID, t0.Add(time.Hour)))
		_, err = f.labels.GetLabel(ctx, f.a, p1.ID)
		requireCode(t, err, domain.NotFound)
		requireCode(t, f.labels.DeleteLabel(ctx, f.a, p1.ID, t0), domain.NotFound)
		f.create(t, f.a, "Spam", "p1")
	})
}

func TestLabels_DeleteOnlyWithoutVersions(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		l := f.create(t, f.a, "L", "")
		requireCode(t, f.labels.DeleteLabel(ctx, f.b, l.ID, t0), domain.NotFound)
		require.NoError(t, f.versions.CreateLabelVersion(ctx, f.version(f.a, l.ID)))
		requireCode(t, f.labels.DeleteLabel(ctx, f.a, l.ID, t0), domain.FailedPrecondition)
		_, err := f.labels.GetLabel(ctx, f.a, l.ID)
		require.NoError(t, err)
		// A deleted label takes no versions.
		e := f.create(t, f.a, "E", "")
		require.NoError(t, f.labels.DeleteLabel(ctx, f.a, e.ID, t0))
		requireCode(t, f.versions.CreateLabelVersion(ctx, f.version(f.a, e.ID)), domain.NotFound)
	})
}

func TestLabels_ListOrderCursorAndFilters(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		red, blue := f.tag(t, f.a, "red"), f.tag(t, f.a, "blue")
		l1 := f.create(t, f.a, "L1", "", red.ID)
		l2 := f.create(t, f.a, "L2", "", red.ID, blue.ID)
		l3 := f.create(t, f.a, "L3", "")
		// Same created time as l3: the id breaks the tie.
		l4 := &domain.Label{ID: "label-zzz", AccountID: f.a, Name: "L4", Created: l3.Created, Updated: l3.Created}
		require.NoError(t, f.labels.CreateLabel(ctx, l4, nil))
		f.create(t, f.b, "B1", "")
		_, err := f.labels.UpdateLabel(ctx, f.a, l1.ID, func(l *domain.Label) error { l.ArchivedAt = &t0; return nil })
		require.NoError(t, err)

		names := func(ls []*domain.Label) []string {
			out := []string{}
			for _, l := range ls {
				out = append(out, l.Name)
			}
			return out
		}
		all, err := f.labels.ListLabels(ctx, domain.LabelQuery{AccountID: f.a, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"L4", "L3", "L2"}, names(all))
		require.Equal(t, []string{"blue", "red"}, []string{all[2].Tags[0].Name, all[2].Tags[1].Name})
		require.NotNil(t, all[0].Tags)
		all, err = f.labels.ListLabels(ctx, domain.LabelQuery{AccountID: f.a, IncludeArchived: true, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"L4", "L3", "L2", "L1"}, names(all))

		page, err := f.labels.ListLabels(ctx, domain.LabelQuery{AccountID: f.a, IncludeArchived: true, Limit: 2,
			After: &domain.LabelCursor{Created: l4.Created, ID: l4.ID}})
		require.NoError(t, err)
		require.Equal(t, []string{"L3", "L2"}, names(page))
		page, err = f.labels.ListLabels(ctx, domain.LabelQuery{AccountID: f.a, IncludeArchived: true, Limit: 2,
			After: &domain.LabelCursor{Created: l2.Created, ID: l2.ID}})
		require.NoError(t, err)
		require.Equal(t, []string{"L1"}, names(page))

		tagged, err := f.labels.ListLabels(ctx, domain.LabelQuery{AccountID: f.a, IncludeArchived: true, TagIDs: []string{red.ID, blue.ID}, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []string{"L2", "L1"}, names(tagged), "any of the tags, each label once")
		none, err := f.labels.ListLabels(ctx, domain.LabelQuery{AccountID: f.b, TagIDs: []string{red.ID}, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, none)
		require.NotNil(t, none)
	})
}

func TestLabelTags_Store(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		z, a := f.tag(t, f.a, "zeta"), f.tag(t, f.a, "alpha")
		requireCode(t, f.tags.CreateLabelTag(ctx, &domain.LabelTag{ID: "dup", AccountID: f.a, Name: "zeta", Created: t0, Updated: t0}, 1000), domain.AlreadyExists)
		theirs := f.tag(t, f.b, "zeta")
		requireCode(t, f.tags.CreateLabelTag(ctx, &domain.LabelTag{ID: "over", AccountID: f.a, Name: "more", Created: t0, Updated: t0}, 2), domain.FailedPrecondition)
		ts, err := f.tags.ListLabelTags(ctx, f.a)
		require.NoError(t, err)
		require.Equal(t, []*domain.LabelTag{a, z}, ts)

		l := f.create(t, f.a, "L", "", z.ID)
		requireCode(t, f.labels.CreateLabel(ctx, f.label(f.a, "M", ""), []string{theirs.ID}), domain.NotFound)
		got, err := f.labels.SetLabelTags(ctx, f.a, l.ID, []string{a.ID}, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, []*domain.LabelTag{a}, got.Tags)
		require.Equal(t, persistence.StoredTime(t0.Add(time.Hour)), got.Updated)
		_, err = f.labels.SetLabelTags(ctx, f.a, l.ID, []string{z.ID, theirs.ID}, t0)
		requireCode(t, err, domain.NotFound)
		_, err = f.labels.SetLabelTags(ctx, f.b, l.ID, nil, t0)
		requireCode(t, err, domain.NotFound)
		got, err = f.labels.GetLabel(ctx, f.a, l.ID)
		require.NoError(t, err)
		require.Equal(t, []*domain.LabelTag{a}, got.Tags, "a failed replace changes nothing")
	})
}

func TestLabelVersions_Store(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		ctx := t.Context()
		f := newLabelFixture(t, db)
		l := f.create(t, f.a, "L", "")
		other := f.create(t, f.a, "Other", "")
		th := 0.7
		v1 := f.version(f.a, l.ID)
		v1.Blob = []byte{0, 1, 2}
		v1.EvalOptions = domain.LabelEvalOptions{Threshold: &th}
		v1.SignalCount, v1.TotalSignalTokens, v1.ComplexityScore = 3, 40, 4.5
		v1.TokenCounts = domain.LabelTokenCounts{DSLTokenCount: 1, GlobalContextTokens: 2, SignalTokens: 3, SignalSpecialTokens: 4, ContentSpecialTokens: 5}
		v1.GlobalContext, v1.Description, v1.CreatedByID = "gc", "d", "me"
		require.NoError(t, f.versions.CreateLabelVersion(ctx, v1))
		require.EqualValues(t, 1, v1.SequentialVersion)
		got, err := f.versions.GetLabelVersion(ctx, f.a, l.ID, v1.ID)
		require.NoError(t, err)
		require.Equal(t, v1, got)
		_, err = f.versions.GetLabelVersion(ctx, f.b, l.ID, v1.ID)
		requireCode(t, err, domain.NotFound)
		_, err = f.versions.GetLabelVersion(ctx, f.a, other.ID, v1.ID)
		requireCode(t, err, domain.NotFound)

		// Parent: same label only; a failure leaves no gap.
		ov := f.version(f.a, other.ID)
		require.NoError(t, f.versions.CreateLabelVersion(ctx, ov))
		bad := f.version(f.a, l.ID)
		bad.ParentLabelVersionID = ov.ID
		requireCode(t, f.versions.CreateLabelVersion(ctx, bad), domain.InvalidArgument)
		bad.ParentLabelVersionID = "missing"
		requireCode(t, f.versions.CreateLabelVersion(ctx, bad), domain.InvalidArgument)
		v2 := f.version(f.a, l.ID)
		v2.ParentLabelVersionID = v1.ID
		require.NoError(t, f.versions.CreateLabelVersion(ctx, v2))
		require.EqualValues(t, 2, v2.SequentialVersion)
		// Another account cannot add versions to the label.
		requireCode(t, f.versions.CreateLabelVersion(ctx, f.version(f.b, l.ID)), domain.NotFound)

		vs, err := f.versions.ListLabelVersions(ctx, f.a, l.ID, nil, 10)
		require.NoError(t, err)
		require.Equal(t, []*domain.LabelVersion{v1, v2}, vs)
		vs, err = f.versions.ListLabelVersions(ctx, f.a, l.ID, &domain.LabelVersionCursor{Seq: 1, ID: v1.ID}, 10)
		require.NoError(t, err)
		require.Equal(t, []*domain.LabelVersion{v2}, vs)
		vs, err = f.versions.ListLabelVersions(ctx, f.b, l.ID, nil, 10)
		require.NoError(t, err)
		require.Empty(t, vs)
		require.NotNil(t, vs)
	})
}

// Concurrent creators get 1..n with no gaps or duplicates.
func TestLabelVersions_ConcurrentSequence(t *testing.T) {
	persistencetest.Run(t, func(t *testing.T, db *persistence.DB) {
		f := newLabelFixture(t, db)
		l := f.create(t, f.a, "L", "")
		const n = 50
		vs := make([]*domain.LabelVersion, n)
		for i := range vs {
			vs[i] = f.version(f.a, l.ID)
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = f.versions.CreateLabelVersion(context.Background(), vs[i])
			}()
		}
		wg.Wait()
		seqs := make([]int, n)
		for i := range n {
			require.NoError(t, errs[i])
			seqs[i] = int(vs[i].SequentialVersion)
		}
		sort.Ints(seqs)
		for i := range seqs {
			require.Equal(t, i+1, seqs[i])
		}
	})
}
