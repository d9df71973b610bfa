package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// labelRule is a label version text that compiles.
const labelRule = "=(\"kill\")\n~(\"idiot\") AND SENTIMENT(\"negative\")"

// decodeAs decodes a 200 body into T.
func decodeAs[T any](t *testing.T, r rawResponse) T {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, "body: %s", r.Body)
	var v T
	require.NoError(t, json.Unmarshal(r.Body, &v), "body: %s", r.Body)
	return v
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// createLabel creates a label through the API and returns it.
func (e *testEnv) createLabel(token string, body any) client.Label {
	e.t.Helper()
	r := e.call(http.MethodPost, "/v1/labels", token, mustJSON(e.t, body))
	return decodeAs[client.LabelResponse](e.t, r).Label
}

func (e *testEnv) createTag(token, name string) client.LabelTag {
	e.t.Helper()
	r := e.call(http.MethodPost, "/v1/label-tags", token, mustJSON(e.t, map[string]any{"name": name, "color": "#ff0000"}))
	return decodeAs[client.CreateLabelTagResponse](e.t, r).LabelTag
}

func (e *testEnv) createVersion(token, labelID string, body any) client.LabelVersion {
	e.t.Helper()
	r := e.call(http.MethodPost, "/v1/labels/"+labelID+"/versions", token, mustJSON(e.t, body))
	return decodeAs[client.LabelVersionResponse](e.t, r).LabelVersion
}

// listLabels lists with a raw query string and returns the page.
func (e *testEnv) listLabels(token, query string) client.ListLabelsResponse {
	e.t.Helper()
	return decodeAs[client.ListLabelsResponse](e.t, e.call(http.MethodGet, "/v1/labels?"+query, token, ""))
}

func labelNames(ls []client.Label) []string {
	out := []string{}
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

func TestLabels_CreateGetPatchArchiveDelete(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.Client(env.LabelFirst.Token)
		desc := "threats of violence"
		created, err := c.CreateLabelWithResponse(ctx, client.CreateLabelJSONRequestBody{Name: "Threat", Description: &desc})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, created.StatusCode(), "%s", created.Body)
		l := created.JSON200.Label
		require.NotEmpty(t, l.LabelId)
		require.Equal(t, "Threat", l.Name)
		require.Equal(t, desc, l.Description)
		require.Equal(t, env.LabelFirst.ID, l.CustomerId)
		require.Equal(t, "", l.PolicyId)
		require.False(t, l.Disabled)
		require.False(t, l.Expunged)
		require.Nil(t, l.ArchivedAt)
		require.Empty(t, l.Tags)
		require.WithinDuration(t, env.Clock.Now(), l.Created, time.Second)
		id := l.LabelId

		got := decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+id, env.LabelFirst.Token, "")).Label
		require.Equal(t, l, got)

		// PATCH is partial and ignores unknown fields such as rule text.
		env.Clock.Add(time.Minute)
		r := env.call(http.MethodPatch, "/v1/labels/"+id, env.LabelFirst.Token, `{"name":"Threats","text":"=(\"x\")","policyId":"p9"}`)
		p := decodeAs[client.LabelResponse](t, r).Label
		require.Equal(t, "Threats", p.Name)
		require.Equal(t, desc, p.Description, "omitted description kept")
		require.False(t, p.Disabled)
		require.Equal(t, "", p.PolicyId, "policyId is not patchable")
		require.True(t, p.Updated.After(l.Updated))
		require.Equal(t, l.Created, p.Created)
		r = env.call(http.MethodPatch, "/v1/labels/"+id, env.LabelFirst.Token, `{"disabled":true,"description":""}`)
		p = decodeAs[client.LabelResponse](t, r).Label
		require.Equal(t, "Threats", p.Name)
		require.True(t, p.Disabled)
		require.Equal(t, "", p.Description)
		// PATCH never creates versions.
		vs := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions", env.LabelFirst.Token, ""))
		require.Empty(t, vs.LabelVersions)
		// Validation.
		r = env.call(http.MethodPatch, "/v1/labels/"+id, env.LabelFirst.Token, `{"name":""}`)
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		r = env.call(http.MethodPatch, "/v1/labels/"+id, env.LabelFirst.Token, `{"name":"   "}`)
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)

		// Archive keeps the first time; unarchive clears it.
		a1 := decodeAs[client.LabelResponse](t, env.call(http.MethodPost, "/v1/labels/"+id+"/archive", env.LabelFirst.Token, "")).Label
		require.NotNil(t, a1.ArchivedAt)
		env.Clock.Add(time.Minute)
		a2 := decodeAs[client.LabelResponse](t, env.call(http.MethodPost, "/v1/labels/"+id+"/archive", env.LabelFirst.Token, "")).Label
		require.Equal(t, *a1.ArchivedAt, *a2.ArchivedAt)
		// GET returns archived labels.
		got = decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+id, env.LabelFirst.Token, "")).Label
		require.NotNil(t, got.ArchivedAt)
		u := decodeAs[client.LabelResponse](t, env.call(http.MethodPost, "/v1/labels/"+id+"/unarchive", env.LabelFirst.Token, "")).Label
		require.Nil(t, u.ArchivedAt)

		// DELETE of a label without versions; afterwards it is gone and its
		// name is free again.
		del, err := c.DeleteLabelWithResponse(ctx, id)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, del.StatusCode(), "%s", del.Body)
		require.True(t, del.JSON200.Deleted)
		require.Equal(t, id, del.JSON200.LabelId)
		requireStatus(t, env.call(http.MethodGet, "/v1/labels/"+id, env.LabelFirst.Token, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodDelete, "/v1/labels/"+id, env.LabelFirst.Token, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodPatch, "/v1/labels/"+id, env.LabelFirst.Token, `{"name":"x"}`), http.StatusNotFound, domain.NotFound)
		require.NotContains(t, labelNames(env.listLabels(env.LabelFirst.Token, "include_archived=true").Labels), "Threats")
		again := env.createLabel(env.LabelFirst.Token, map[string]any{"name": "Threats"})
		require.NotEqual(t, id, again.LabelId)

		// Unknown ids.
		requireStatus(t, env.call(http.MethodGet, "/v1/labels/nope", env.LabelFirst.Token, ""), http.StatusNotFound, domain.NotFound)
	})
}

func TestLabels_Uniqueness(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		env.createLabel(tok, map[string]any{"name": "Spam"})
		// Independent: unique by (account, name).
		r := env.call(http.MethodPost, "/v1/labels", tok, `{"name":"Spam"}`)
		requireStatus(t, r, http.StatusConflict, domain.AlreadyExists)
		r = env.call(http.MethodPost, "/v1/labels", tok, `{"name":"Spam","policyId":""}`)
		requireStatus(t, r, http.StatusConflict, domain.AlreadyExists)
		// Policy-scoped: unique by (account, name, policyId).
		p1 := env.createLabel(tok, map[string]any{"name": "Spam", "policyId": "p1"})
		require.Equal(t, "p1", p1.PolicyId)
		r = env.call(http.MethodPost, "/v1/labels", tok, `{"name":"Spam","policyId":"p1"}`)
		requireStatus(t, r, http.StatusConflict, domain.AlreadyExists)
		env.createLabel(tok, map[string]any{"name": "Spam", "policyId": "p2"})
		// Names are case-sensitive and per account.
		env.createLabel(tok, map[string]any{"name": "spam"})
		other := env.newAccount("other", domain.AccountLabelFirst)
		env.createLabel(other.Token, map[string]any{"name": "Spam"})
		// Renaming onto a taken name is a conflict too.
		x := env.createLabel(tok, map[string]any{"name": "Other", "policyId": "p1"})
		r = env.call(http.MethodPatch, "/v1/labels/"+x.LabelId, tok, `{"name":"Spam"}`)
		requireStatus(t, r, http.StatusConflict, domain.AlreadyExists)
		// Archived labels still hold their name.
		env.call(http.MethodPost, "/v1/labels/"+p1.LabelId+"/archive", tok, "")
		r = env.call(http.MethodPost, "/v1/labels", tok, `{"name":"Spam","policyId":"p1"}`)
		requireStatus(t, r, http.StatusConflict, domain.AlreadyExists)
		// A soft-deleted label frees it.
		require.Equal(t, http.StatusOK, env.call(http.MethodDelete, "/v1/labels/"+p1.LabelId, tok, "").Status)
		env.createLabel(tok, map[string]any{"name": "Spam", "policyId": "p1"})
	})
}

func TestLabels_DeleteWithVersionsFails(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		l := env.createLabel(tok, map[string]any{"name": "Threat"})
		env.createVersion(tok, l.LabelId, map[string]any{"text": labelRule})
		r := env.call(http.MethodDelete, "/v1/labels/"+l.LabelId, tok, "")
		m := requireStatus(t, r, http.StatusBadRequest, domain.FailedPrecondition)
		require.Contains(t, m["message"], "archive")
		// Still there, and archiving is the way out.
		decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+l.LabelId, tok, ""))
		a := decodeAs[client.LabelResponse](t, env.call(http.MethodPost, "/v1/labels/"+l.LabelId+"/archive", tok, "")).Label
		require.NotNil(t, a.ArchivedAt)
		requireStatus(t, env.call(http.MethodDelete, "/v1/labels/"+l.LabelId, tok, ""), http.StatusBadRequest, domain.FailedPrecondition)
	})
}

func TestLabels_ListOrderFiltersAndPaging(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		red, blue, green := env.createTag(tok, "red"), env.createTag(tok, "blue"), env.createTag(tok, "green")
		var ids []string
		for i := range 5 {
			body := map[string]any{"name": fmt.Sprintf("L%d", i)}
			switch i {
			case 1:
				body["tagIds"] = []string{red.LabelTagId}
			case 2:
				body["tagIds"] = []string{blue.LabelTagId, red.LabelTagId}
			case 3:
				body["tagIds"] = []string{blue.LabelTagId}
			}
			ids = append(ids, env.createLabel(tok, body).LabelId)
			env.Clock.Add(time.Second)
		}
		// Same created time: the id breaks the tie, still newest first.
		ids = append(ids, env.createLabel(tok, map[string]any{"name": "L5"}).LabelId)
		ids = append(ids, env.createLabel(tok, map[string]any{"name": "L6"}).LabelId)
		env.call(http.MethodPost, "/v1/labels/"+ids[0]+"/archive", tok, "")

		all := env.listLabels(tok, "")
		require.Equal(t, []string{"L6", "L5", "L4", "L3", "L2", "L1"}, labelNames(all.Labels))
		require.Nil(t, all.NextPageToken)
		require.Equal(t, []string{"L6", "L5", "L4", "L3", "L2", "L1", "L0"}, labelNames(env.listLabels(tok, "include_archived=true").Labels))
		require.Equal(t, []string{"blue", "red"}, []string{(all.Labels[4].Tags)[0].Name, (all.Labels[4].Tags)[1].Name}, "tags by name")

		// tag_ids: any of the given tags; both spellings.
		require.Equal(t, []string{"L2", "L1"}, labelNames(env.listLabels(tok, "tag_ids="+red.LabelTagId).Labels))
		require.Equal(t, []string{"L3", "L2", "L1"}, labelNames(env.listLabels(tok, "tag_ids="+red.LabelTagId+"&tag_ids="+blue.LabelTagId).Labels))
		require.Equal(t, []string{"L3", "L2", "L1"}, labelNames(env.listLabels(tok, "tagIds="+red.LabelTagId+"&tagIds="+blue.LabelTagId).Labels))
		require.Empty(t, labelNames(env.listLabels(tok, "tag_ids="+green.LabelTagId).Labels))
		require.Empty(t, labelNames(env.listLabels(tok, "tag_ids=unknown").Labels))

		// Paging walks every label once, newest first.
		var walked []string
		token := ""
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10)
			q := "include_archived=true&page_size=3"
			if token != "" {
				q += "&page_token=" + url.QueryEscape(token)
			}
			p := env.listLabels(tok, q)
			walked = append(walked, labelNames(p.Labels)...)
			if p.NextPageToken == nil {
				break
			}
			require.Len(t, p.Labels, 3)
			token = *p.NextPageToken
		}
		require.Equal(t, []string{"L6", "L5", "L4", "L3", "L2", "L1", "L0"}, walked)
		// Exactly a page: no token.
		p := env.listLabels(tok, "page_size=6")
		require.Len(t, p.Labels, 6)
		require.Nil(t, p.NextPageToken)
		// The snake and camel spellings of page_size both work.
		require.Len(t, env.listLabels(tok, "pageSize=2").Labels, 2)

		// Tokens are bound to the request: other filters, another account,
		// another operation, or a forged token are INVALID_ARGUMENT.
		first := env.listLabels(tok, "page_size=2")
		require.NotNil(t, first.NextPageToken)
		tk := url.QueryEscape(*first.NextPageToken)
		second := env.listLabels(tok, "page_size=2&page_token="+tk)
		require.Equal(t, []string{"L4", "L3"}, labelNames(second.Labels))
		for _, q := range []string{
			"include_archived=true&page_token=" + tk,
			"tag_ids=" + red.LabelTagId + "&page_token=" + tk,
			"page_token=garbage",
			"page_token=" + tk + "x",
		} {
			r := env.call(http.MethodGet, "/v1/labels?"+q, tok, "")
			m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
			require.Contains(t, fieldViolations(t, m), "page_token", q)
		}
		other := env.newAccount("other", domain.AccountLabelFirst)
		requireStatus(t, env.call(http.MethodGet, "/v1/labels?page_token="+tk, other.Token, ""), http.StatusBadRequest, domain.InvalidArgument)
		requireStatus(t, env.call(http.MethodGet, "/v1/labels/"+ids[1]+"/versions?page_token="+tk, tok, ""), http.StatusBadRequest, domain.InvalidArgument)

		// Negative page sizes are rejected.
		r := env.call(http.MethodGet, "/v1/labels?page_size=-1", tok, "")
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		// Another account sees none of them.
		require.Empty(t, labelNames(env.listLabels(other.Token, "include_archived=true").Labels))
	})
}

// TestLabels_PageSizeBoundaries: default 100, at most 1000, larger values
// treated as 1000, with 1,001 labels.
func TestLabels_PageSizeBoundaries(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		for i := range 1001 {
			_, err := env.Main.Labels.CreateLabel(ctx, env.LabelFirst.ID, labels.NewLabel{Name: fmt.Sprintf("label-%04d", i)})
			require.NoError(t, err)
		}
		tok := env.LabelFirst.Token
		p := env.listLabels(tok, "")
		require.Len(t, p.Labels, 100)
		require.NotNil(t, p.NextPageToken)
		p = env.listLabels(tok, "page_size=0")
		require.Len(t, p.Labels, 100)
		p = env.listLabels(tok, "page_size=1000")
		require.Len(t, p.Labels, 1000)
		require.NotNil(t, p.NextPageToken)
		rest := env.listLabels(tok, "page_size=1000&page_token="+url.QueryEscape(*p.NextPageToken))
		require.Len(t, rest.Labels, 1)
		require.Nil(t, rest.NextPageToken)
		require.Equal(t, "label-0000", rest.Labels[0].Name)
		for _, size := range []string{"1001", "5000", "2147483647"} {
			p = env.listLabels(tok, "page_size="+size)
			require.Len(t, p.Labels, 1000, size)
			require.NotNil(t, p.NextPageToken)
		}
		// A token from a page_size=1000 request also works with another size.
		p = env.listLabels(tok, "page_size=999")
		rest = env.listLabels(tok, "page_size=5&page_token="+url.QueryEscape(*p.NextPageToken))
		require.Equal(t, []string{"label-0001", "label-0000"}, labelNames(rest.Labels))
	})
}

func TestLabelTags(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.LabelFirst.Token
		c := env.Client(tok)
		color := "#00ff00"
		res, err := c.CreateLabelTagWithResponse(ctx, client.CreateLabelTagJSONRequestBody{Name: "urgent", Color: &color})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), "%s", res.Body)
		urgent := res.JSON200.LabelTag
		require.Equal(t, "urgent", urgent.Name)
		require.Equal(t, color, urgent.Color)
		require.Equal(t, env.LabelFirst.ID, urgent.CustomerId)
		require.False(t, urgent.Expunged)
		abuse := env.createTag(tok, "abuse")

		r := env.call(http.MethodPost, "/v1/label-tags", tok, `{"name":"urgent"}`)
		requireStatus(t, r, http.StatusConflict, domain.AlreadyExists)
		r = env.call(http.MethodPost, "/v1/label-tags", tok, `{"name":" "}`)
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)

		list, err := c.ListLabelTagsWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, list.StatusCode())
		require.Len(t, list.JSON200.LabelTags, 2)
		require.Equal(t, "abuse", list.JSON200.LabelTags[0].Name, "by name")
		requireMatchesSpec(t, env.call(http.MethodGet, "/v1/label-tags", tok, ""))

		// Tag names are per account; another account's tags are not usable.
		other := env.newAccount("other", domain.AccountLabelFirst)
		theirs := env.createTag(other.Token, "urgent")
		require.Empty(t, decodeAs[client.ListLabelTagsResponse](t, env.call(http.MethodGet, "/v1/label-tags", env.newAccount("third", domain.AccountLabelFirst).Token, "")).LabelTags)

		l := env.createLabel(tok, map[string]any{"name": "Threat", "tagIds": []string{urgent.LabelTagId}})
		require.Len(t, l.Tags, 1)
		require.Equal(t, urgent.LabelTagId, l.Tags[0].LabelTagId)
		r = env.call(http.MethodPost, "/v1/labels", tok, mustJSON(t, map[string]any{"name": "X", "tagIds": []string{theirs.LabelTagId}}))
		requireStatus(t, r, http.StatusNotFound, domain.NotFound)
		r = env.call(http.MethodPost, "/v1/labels", tok, mustJSON(t, map[string]any{"name": "X", "tagIds": []string{"nope"}}))
		requireStatus(t, r, http.StatusNotFound, domain.NotFound)
		decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+l.LabelId, tok, ""))

		// PUT replaces the tags.
		env.Clock.Add(time.Minute)
		set, err := c.SetLabelTagsWithResponse(ctx, l.LabelId, client.SetLabelTagsJSONRequestBody{LabelTagIds: []string{abuse.LabelTagId, abuse.LabelTagId}})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, set.StatusCode(), "%s", set.Body)
		require.Len(t, set.JSON200.Label.Tags, 1)
		require.Equal(t, "abuse", set.JSON200.Label.Tags[0].Name)
		require.True(t, set.JSON200.Label.Updated.After(l.Updated))
		got := decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+l.LabelId, tok, "")).Label
		require.Len(t, got.Tags, 1)
		r = env.call(http.MethodPut, "/v1/labels/"+l.LabelId+"/tags", tok, mustJSON(t, map[string]any{"labelTagIds": []string{urgent.LabelTagId, theirs.LabelTagId}}))
		requireStatus(t, r, http.StatusNotFound, domain.NotFound)
		got = decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+l.LabelId, tok, "")).Label
		require.Equal(t, "abuse", got.Tags[0].Name, "a failed PUT changes nothing")
		cleared := decodeAs[client.LabelResponse](t, env.call(http.MethodPut, "/v1/labels/"+l.LabelId+"/tags", tok, `{"labelTagIds":[]}`)).Label
		require.Empty(t, cleared.Tags)
	})
}

// TestLabels_OtherAccountIsNotFound: every label, tag and version endpoint
// answers 404 for another account's objects.
func TestLabels_OtherAccountIsNotFound(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		tag := env.createTag(tok, "mine")
		l := env.createLabel(tok, map[string]any{"name": "Mine", "tagIds": []string{tag.LabelTagId}})
		v := env.createVersion(tok, l.LabelId, map[string]any{"text": labelRule})
		empty := env.createLabel(tok, map[string]any{"name": "Empty"})
		id, vid := l.LabelId, v.LabelVersionId

		other := env.newAccount("intruder", domain.AccountLabelFirst)
		ot := other.Token
		otherTag := env.createTag(ot, "theirs")
		otherLabel := env.createLabel(ot, map[string]any{"name": "Theirs"})
		for _, tc := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/labels/" + id, ""},
			{http.MethodPatch, "/v1/labels/" + id, `{"name":"stolen"}`},
			{http.MethodDelete, "/v1/labels/" + empty.LabelId, ""},
			{http.MethodPost, "/v1/labels/" + id + "/archive", ""},
			{http.MethodPost, "/v1/labels/" + id + "/unarchive", ""},
			{http.MethodPut, "/v1/labels/" + id + "/tags", mustJSON(t, map[string]any{"labelTagIds": []string{otherTag.LabelTagId}})},
			{http.MethodGet, "/v1/labels/" + id + "/versions", ""},
			{http.MethodPost, "/v1/labels/" + id + "/versions", mustJSON(t, map[string]any{"text": labelRule})},
			{http.MethodGet, "/v1/labels/" + id + "/versions/" + vid, ""},
			// Another account's version under one's own label, and another
			// account's tag on one's own label.
			{http.MethodGet, "/v1/labels/" + otherLabel.LabelId + "/versions/" + vid, ""},
			{http.MethodPut, "/v1/labels/" + otherLabel.LabelId + "/tags", mustJSON(t, map[string]any{"labelTagIds": []string{tag.LabelTagId}})},
			{http.MethodPost, "/v1/labels", mustJSON(t, map[string]any{"name": "X", "tagIds": []string{tag.LabelTagId}})},
		} {
			r := env.call(tc.method, tc.path, ot, tc.body)
			requireStatus(t, r, http.StatusNotFound, domain.NotFound)
			require.NotContains(t, strings.ToLower(string(r.Body)), "permission", "%s %s", tc.method, tc.path)
		}
		// The owner's objects are unchanged.
		got := decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+id, tok, "")).Label
		require.Equal(t, "Mine", got.Name)
		require.Nil(t, got.ArchivedAt)
		require.Len(t, got.Tags, 1)
		vs := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions", tok, ""))
		require.Len(t, vs.LabelVersions, 1)
		decodeAs[client.LabelResponse](t, env.call(http.MethodGet, "/v1/labels/"+empty.LabelId, tok, ""))
		// Listings are per account.
		require.Equal(t, []string{"Theirs"}, labelNames(env.listLabels(ot, "include_archived=true").Labels))
		tags := decodeAs[client.ListLabelTagsResponse](t, env.call(http.MethodGet, "/v1/label-tags", ot, ""))
		require.Len(t, tags.LabelTags, 1)
	})
}

// TestLabels_PolicyFirstAccountsAreRefused: every label endpoint is
// label-first only.
func TestLabels_PolicyFirstAccountsAreRefused(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		l := env.createLabel(env.LabelFirst.Token, map[string]any{"name": "L"})
		id := l.LabelId
		for _, tc := range []struct{ method, path, body string }{
			{http.MethodGet, "/v1/labels", ""},
			{http.MethodPost, "/v1/labels", `{"name":"x"}`},
			{http.MethodGet, "/v1/labels/" + id, ""},
			{http.MethodPatch, "/v1/labels/" + id, `{"name":"x"}`},
			{http.MethodDelete, "/v1/labels/" + id, ""},
			{http.MethodPost, "/v1/labels/" + id + "/archive", ""},
			{http.MethodPost, "/v1/labels/" + id + "/unarchive", ""},
			{http.MethodPut, "/v1/labels/" + id + "/tags", `{"labelTagIds":[]}`},
			{http.MethodGet, "/v1/labels/" + id + "/versions", ""},
			{http.MethodPost, "/v1/labels/" + id + "/versions", `{"text":"=(\"a\")"}`},
			{http.MethodGet, "/v1/labels/" + id + "/versions/v", ""},
			{http.MethodGet, "/v1/label-tags", ""},
			{http.MethodPost, "/v1/label-tags", `{"name":"x"}`},
		} {
			r := env.call(tc.method, tc.path, env.PolicyFirst.Token, tc.body)
			requireStatus(t, r, http.StatusBadRequest, domain.FailedPrecondition)
		}
	})
}
