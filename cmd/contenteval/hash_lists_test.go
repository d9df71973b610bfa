package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// texturedImage is a 128x128 image with enough structure for a PDQ of full
// quality; variant > 0 nudges one pixel, giving other bytes (another
// content) with (nearly) the same PDQ.
func texturedImage(t *testing.T, seed, variant int) ([]byte, imaging.Hash) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 128, 128))
	for y := range 128 {
		for x := range 128 {
			v := uint8((x*7 + y*13 + seed*31 + (x/16)*(y/16)*40) % 256)
			if (x/32+y/32+seed)%2 == 0 {
				v = 255 - v
			}
			img.Set(x, y, color.RGBA{v, v / 2, 255 - v, 255})
		}
	}
	if variant > 0 {
		x, y := variant%128, (variant/128)%128
		c := img.RGBAAt(x, y)
		c.G ^= 1
		img.SetRGBA(x, y, c)
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	decoded, _, err := imaging.Decode(b.Bytes(), imaging.Limits{})
	require.NoError(t, err)
	h, q := imaging.PDQ(decoded)
	require.GreaterOrEqual(t, q, imaging.RecommendedMinPDQQuality)
	return b.Bytes(), h
}

// flip returns h with the first n bits flipped.
func flip(h imaging.Hash, n int) imaging.Hash {
	for i := range n {
		h[i/8] ^= 1 << (i % 8)
	}
	return h
}

type hashListClient struct {
	t   *testing.T
	env *testEnv
	tok string
	c   *client.ClientWithResponses
}

func (e *testEnv) hashLists(t *testing.T, tok string) *hashListClient {
	return &hashListClient{t: t, env: e, tok: tok, c: e.Client(tok)}
}

func (h *hashListClient) create(req client.CreateHashListRequest) client.HashList {
	h.t.Helper()
	r, err := h.c.CreateHashListWithResponse(context.Background(), req)
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	specChecked(h.t, r.HTTPResponse, r.Body)
	return r.JSON200.HashList
}

func (h *hashListClient) add(listID string, hashes ...client.NewHashListEntry) {
	h.t.Helper()
	r, err := h.c.AddHashListHashesWithResponse(context.Background(), listID, client.AddHashListHashesRequest{Hashes: hashes})
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
}

func (h *hashListClient) entry(listID, hash string) client.HashListEntry {
	h.t.Helper()
	r, err := h.c.ListHashListHashesWithResponse(context.Background(), listID, nil)
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	specChecked(h.t, r.HTTPResponse, r.Body)
	for _, e := range r.JSON200.Hashes {
		if e.Hash == hash {
			return e
		}
	}
	h.t.Fatalf("hash %s not in list %s", hash, listID)
	return client.HashListEntry{}
}

// submitImage evaluates an image synchronously and returns the precheck
// failure (nil when the job completed).
func (h *hashListClient) submitImage(policyID string, img []byte) *client.PrecheckFailureDetail {
	h.t.Helper()
	r, err := h.c.CreateJobWithResponse(context.Background(), client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
		ContentData: []client.ContentData{{Image: &img}}})
	require.NoError(h.t, err)
	specChecked(h.t, r.HTTPResponse, r.Body)
	if r.StatusCode() == 499 {
		require.NotNil(h.t, r.JSON499)
		require.Len(h.t, r.JSON499.Details, 1)
		return &r.JSON499.Details[0]
	}
	require.Equal(h.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	require.Equal(h.t, client.JOBSTATUSCOMPLETED, r.JSON200.Job.Status, "%+v", r.JSON200.Job.Error)
	return nil
}

// shadowMatches evaluates content synchronously, requires it to complete,
// and returns its report's precheck matches, as the job's GET gives them
// too (they are stored with the report).
func (h *hashListClient) shadowMatches(policyID string, content client.ContentData) []client.PrecheckMatch {
	h.t.Helper()
	j := h.env.submit(h.tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: []client.ContentData{content}})
	require.Equal(h.t, client.JOBSTATUSCOMPLETED, j.Status, "%+v", j.Error)
	got, err := h.c.GetJobWithResponse(context.Background(), j.JobUuid)
	require.NoError(h.t, err)
	require.Equal(h.t, http.StatusOK, got.StatusCode(), "%s", got.Body)
	rep := (*got.JSON200.Job.Results)[0].Report
	require.Equal(h.t, (*j.Results)[0].Report.PrecheckMatches, rep.PrecheckMatches, "stored as answered")
	if rep.PrecheckMatches == nil {
		return nil
	}
	return *rep.PrecheckMatches
}

func bands(exact, high, medium, low int32) *client.HashBands {
	return &client.HashBands{Exact: exact, High: high, Medium: medium, Low: low}
}

// TestHashListBands: the same distance is HIGH for one list and MEDIUM for
// another, and the failure names the list, the hash, its source and note.
func TestHashListBands(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		hl := env.hashLists(t, env.PolicyFirst.Token)
		policyID := env.createPolicy(env.PolicyFirst.Token, "p")
		img, pdq := texturedImage(t, 1, 0)
		listed := flip(pdq, 15).String()

		for _, tc := range []struct {
			name  string
			bands *client.HashBands
			want  client.PrecheckMatchConfidence
		}{
			{"wide", bands(0, 20, 25, 31), client.PRECHECKMATCHCONFIDENCEHIGH},
			{"narrow", bands(0, 10, 20, 31), client.PRECHECKMATCHCONFIDENCEMEDIUM},
		} {
			l := hl.create(client.CreateHashListRequest{Name: tc.name, Kind: client.Pdq, Bands: tc.bands})
			hl.add(l.ListId, client.NewHashListEntry{Hash: listed, Source: ptr("bank-" + tc.name), Note: ptr("case 7")})
			f := hl.submitImage(policyID, img)
			require.NotNil(t, f, tc.name)
			require.Equal(t, tc.want, *f.MatchConfidence, tc.name)
			require.Equal(t, l.ListId, *f.ListId)
			require.Equal(t, tc.name, *f.ListName)
			require.Equal(t, "bank-"+tc.name, *f.Source)
			require.Equal(t, "case 7", *f.Note)
			require.Equal(t, listed, *f.MatchedHash)
			require.EqualValues(t, 15, *f.Distance)
			require.EqualValues(t, 1, hl.entry(l.ListId, listed).MatchCount)
			r, err := hl.c.DeleteHashListWithResponse(context.Background(), l.ListId)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		}
		require.Nil(t, hl.submitImage(policyID, img), "no list left")
	})
}

// TestHashListModes: an ALLOW list beats an ENFORCE list on the same
// content; a SHADOW list records its match without rejecting.
func TestHashListModes(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		hl := env.hashLists(t, env.PolicyFirst.Token)
		policyID := env.createPolicy(env.PolicyFirst.Token, "p")
		img, pdq := texturedImage(t, 2, 0)
		sum := md5.Sum(img)

		shadow := hl.create(client.CreateHashListRequest{Name: "shadow", Kind: client.Pdq, Mode: ptr(client.HASHLISTMODESHADOW)})
		hl.add(shadow.ListId, client.NewHashListEntry{Hash: pdq.String()})
		ms := hl.shadowMatches(policyID, client.ContentData{Image: &img})
		require.Len(t, ms, 1, "shadow does not reject, and the report says what matched")
		require.Equal(t, client.PrecheckMatch{ListId: shadow.ListId, ListName: "shadow", Kind: client.Pdq, MatchedHash: pdq.String(),
			MatchConfidence: client.PRECHECKMATCHCONFIDENCEHIGH}, ms[0])
		require.EqualValues(t, 1, hl.entry(shadow.ListId, pdq.String()).MatchCount, "shadow records")

		enforce := hl.create(client.CreateHashListRequest{Name: "enforce", Kind: client.Md5})
		hl.add(enforce.ListId, client.NewHashListEntry{Hash: hex.EncodeToString(sum[:])})
		f := hl.submitImage(policyID, img)
		require.NotNil(t, f)
		require.Equal(t, enforce.ListId, *f.ListId)

		allow := hl.create(client.CreateHashListRequest{Name: "allow", Kind: client.Pdq, Mode: ptr(client.HASHLISTMODEALLOW)})
		hl.add(allow.ListId, client.NewHashListEntry{Hash: flip(pdq, 3).String()})
		require.Nil(t, hl.submitImage(policyID, img), "allow wins over enforce")
		require.EqualValues(t, 1, hl.entry(allow.ListId, flip(pdq, 3).String()).MatchCount)

		// The allow list turned SHADOW: enforce rejects again.
		r, err := hl.c.UpdateHashListWithResponse(context.Background(), allow.ListId, client.UpdateHashListRequest{Mode: ptr(client.HASHLISTMODESHADOW)})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		require.NotNil(t, hl.submitImage(policyID, img))
		// Disabled, the enforced hash matches nothing; enabled, it does.
		md5hex := hex.EncodeToString(sum[:])
		d, err := hl.c.DisableHashListHashWithResponse(context.Background(), enforce.ListId, md5hex)
		require.NoError(t, err)
		require.Equal(t, client.HASHSTATEDISABLED, d.JSON200.Hash.State)
		require.Nil(t, hl.submitImage(policyID, img))
		e, err := hl.c.EnableHashListHashWithResponse(context.Background(), enforce.ListId, md5hex)
		require.NoError(t, err)
		require.Equal(t, client.HASHSTATEACTIVE, e.JSON200.Hash.State)
		require.NotNil(t, hl.submitImage(policyID, img))
	})
}

// TestHashListFlood: with the default flood limit of 200, the 201st
// distinct content one hash matches within an hour quarantines it and
// passes, as does the 202nd (the quarantined hash matches nothing once the
// lists are reloaded); confirming the hash makes it reject again.
func TestHashListFlood(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		hl := env.hashLists(t, env.PolicyFirst.Token)
		policyID := env.createPolicy(env.PolicyFirst.Token, "p")
		_, pdq := texturedImage(t, 3, 0)
		l := hl.create(client.CreateHashListRequest{Name: "flood", Kind: client.Pdq})
		require.EqualValues(t, 200, l.FloodLimit)
		hl.add(l.ListId, client.NewHashListEntry{Hash: pdq.String()})

		for i := 1; i <= 200; i++ {
			img, _ := texturedImage(t, 3, i)
			require.NotNil(t, hl.submitImage(policyID, img), "content %d", i)
		}
		first, _ := texturedImage(t, 3, 1)
		require.NotNil(t, hl.submitImage(policyID, first), "a content seen before is no new one")
		img201, _ := texturedImage(t, 3, 201)
		require.Nil(t, hl.submitImage(policyID, img201), "the 201st distinct content quarantines the hash")
		e := hl.entry(l.ListId, pdq.String())
		require.Equal(t, client.HASHSTATEQUARANTINED, e.State)
		// The server drops a quarantined hash from matching at its next
		// reload of the lists (every 2 s); reloaded now, the 202nd is no
		// match at all, and its count does not depend on the poll's timing.
		require.NoError(t, env.Main.Precheck.Reload(t.Context()))
		img202, _ := texturedImage(t, 3, 202)
		require.Nil(t, hl.submitImage(policyID, img202), "the 202nd passes")

		c, err := hl.c.ConfirmHashListHashWithResponse(context.Background(), l.ListId, pdq.String())
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, c.StatusCode(), "%s", c.Body)
		require.Equal(t, client.HASHSTATEACTIVE, c.JSON200.Hash.State)
		require.NotNil(t, hl.submitImage(policyID, img202), "confirmed, it rejects again")
		require.EqualValues(t, 203, hl.entry(l.ListId, pdq.String()).MatchCount, "200, the one seen before, the 201st and the confirmed rejection")

		metrics := env.call(http.MethodGet, "/metrics", "", "")
		require.Contains(t, string(metrics.Body), fmt.Sprintf(`contenteval_hash_list_quarantines_total{list_id=%q} 1`, l.ListId))
	})
}

// TestHashListImport: a file with a bad line imports nothing and names the
// line; a good file and a threatexchange signal CSV import every hash with provenance.
func TestHashListImport(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		hl := env.hashLists(t, env.PolicyFirst.Token)
		ctx := context.Background()
		l := hl.create(client.CreateHashListRequest{Name: "imported", Kind: client.Pdq})
		a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)

		bad := a + ",bank,first\n# comment\n" + b + "\nnot-a-hash\n"
		r, err := hl.c.ImportHashListWithTextBodyWithResponse(ctx, l.ListId, nil, bad)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, r.StatusCode(), "%s", r.Body)
		require.Contains(t, string(r.Body), "line 4")
		require.Contains(t, string(r.Body), `"file"`)
		g, err := hl.c.GetHashListWithResponse(ctx, l.ListId)
		require.NoError(t, err)
		require.EqualValues(t, 0, g.JSON200.HashList.HashCount, "nothing half-imported")

		r, err = hl.c.ImportHashListWithTextBodyWithResponse(ctx, l.ListId, nil, strings.TrimSuffix(bad, "not-a-hash\n"))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		require.EqualValues(t, 2, r.JSON200.HashList.HashCount)
		require.Equal(t, "bank", hl.entry(l.ListId, a).Source)
		require.Equal(t, "first", hl.entry(l.ListId, a).Note)

		c := strings.Repeat("c", 64)
		// The header and shape of python-threatexchange's `dataset -P --csv`.
		csv := "collab,signal_type,signal_str,category,tags\nNCMEC,pdq," + c + ",TRUE_POSITIVE,media_type_photo\n" +
			"NCMEC,video_md5,0123456789abcdef0123456789abcdef,TRUE_POSITIVE,\nNCMEC,url,https://example.test/,WORTH_INVESTIGATING,\n"
		r, err = hl.c.ImportHashListWithTextBodyWithResponse(ctx, l.ListId, &client.ImportHashListParams{Format: ptr(client.HASHLISTIMPORTFORMATHMA)}, csv)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		require.EqualValues(t, 3, r.JSON200.HashList.HashCount, "the md5 and url rows are not this list's kind")
		require.EqualValues(t, 1, r.JSON200.Added)
		require.EqualValues(t, 2, *r.JSON200.Skipped)
		require.Equal(t, "NCMEC", hl.entry(l.ListId, c).Source)
		require.Equal(t, "TRUE_POSITIVE; tags: media_type_photo", hl.entry(l.ListId, c).Note)

		r, err = hl.c.ImportHashListWithTextBodyWithResponse(ctx, l.ListId, &client.ImportHashListParams{Format: ptr(client.HASHLISTIMPORTFORMATHMA)},
			"signal_type,signal_str\npdq,"+c+"\npdq,zzz\n")
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, r.StatusCode(), "%s", r.Body)
		require.Contains(t, string(r.Body), "line 3")
	})
}

// TestHashListAccounts: another account's list is invisible (404) and never
// matches the content of others; operator-wide lists apply to every account
// and are read-only over the API; api keys may not use the lists at all.
func TestHashListAccounts(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		owner := env.hashLists(t, env.PolicyFirst.Token)
		other := env.newAccount("other", domain.AccountPolicyFirst)
		stranger := env.hashLists(t, other.Token)
		img, pdq := texturedImage(t, 4, 0)
		l := owner.create(client.CreateHashListRequest{Name: "mine", Kind: client.Pdq})
		owner.add(l.ListId, client.NewHashListEntry{Hash: pdq.String()})

		g, err := stranger.c.GetHashListWithResponse(ctx, l.ListId)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, g.StatusCode(), "%s", g.Body)
		h, err := stranger.c.ListHashListHashesWithResponse(ctx, l.ListId, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, h.StatusCode(), "%s", h.Body)
		d, err := stranger.c.DisableHashListHashWithResponse(ctx, l.ListId, pdq.String())
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, d.StatusCode(), "%s", d.Body)
		ls, err := stranger.c.ListHashListsWithResponse(ctx)
		require.NoError(t, err)
		require.Empty(t, ls.JSON200.HashLists)

		require.Nil(t, stranger.submitImage(env.createPolicy(other.Token, "p"), img), "another account's list never matches")
		require.NotNil(t, owner.submitImage(env.createPolicy(env.PolicyFirst.Token, "p"), img))

		// An operator-wide list (the CLI's) applies to both and is read-only.
		sum := md5.Sum(img)
		op, err := env.Main.Precheck.Import(ctx, "operator", imaging.KindMD5, strings.NewReader(hex.EncodeToString(sum[:])+"\n"))
		require.NoError(t, err)
		require.NoError(t, env.Main.Precheck.Reload(ctx))
		g, err = stranger.c.GetHashListWithResponse(ctx, op.ID)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, g.StatusCode(), "%s", g.Body)
		require.True(t, g.JSON200.HashList.OperatorWide)
		u, err := stranger.c.UpdateHashListWithResponse(ctx, op.ID, client.UpdateHashListRequest{Mode: ptr(client.HASHLISTMODESHADOW)})
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, u.StatusCode(), "%s", u.Body)
		f := stranger.submitImage(env.createPolicy(other.Token, "q"), img)
		require.NotNil(t, f)
		require.Equal(t, op.ID, *f.ListId)

		// Hash lists are admin-only.
		_, apiKey, err := env.Main.Keys.IssueRole(ctx, env.PolicyFirst.ID, "reader", domain.RoleAPI, 0)
		require.NoError(t, err)
		ls, err = env.hashLists(t, apiKey).c.ListHashListsWithResponse(ctx)
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, ls.StatusCode(), "%s", ls.Body)
	})
}

// TestHashListHostileInput: bad input to the hash-list endpoints is 400
// naming the field, never a 500.
func TestHashListHostileInput(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		hl := env.hashLists(t, tok)
		l := hl.create(client.CreateHashListRequest{Name: "l", Kind: client.Md5})
		base := "/v1/hash-lists/" + l.ListId
		for _, tc := range []struct {
			name, method, path, body, field string
		}{
			{"bands out of order", http.MethodPost, "/v1/hash-lists", `{"name":"x","kind":"pdq","bands":{"exact":9,"high":8,"medium":16,"low":24}}`, "bands"},
			{"band too wide", http.MethodPost, "/v1/hash-lists", `{"name":"x","kind":"pdq","bands":{"exact":0,"high":8,"medium":16,"low":200}}`, "bands.low"},
			{"unknown kind", http.MethodPost, "/v1/hash-lists", `{"name":"x","kind":"crc32"}`, "kind"},
			{"bad name", http.MethodPost, "/v1/hash-lists", `{"name":"../x","kind":"md5"}`, "name"},
			{"flood limit zero", http.MethodPatch, base, `{"floodLimit":0}`, "floodLimit"},
			{"no hashes", http.MethodPost, base + "/hashes", `{"hashes":[]}`, "hashes"},
			{"bad hash", http.MethodPost, base + "/hashes", `{"hashes":[{"hash":"` + strings.Repeat("a", 32) + `"},{"hash":"xyz"}]}`, "hashes[1].hash"},
			{"wrong kind of hash", http.MethodPost, base + "/hashes", `{"hashes":[{"hash":"` + strings.Repeat("a", 40) + `"}]}`, "hashes[0].hash"},
			{"long source", http.MethodPost, base + "/hashes", `{"hashes":[{"hash":"` + strings.Repeat("a", 32) + `","source":"` + strings.Repeat("s", 300) + `"}]}`, "hashes[0].source"},
			{"bad page token", http.MethodGet, base + "/hashes?pageToken=zz", "", "pageToken"},
			{"bad hash in path", http.MethodPost, base + "/hashes/" + strings.Repeat("a", 31) + "/disable", "", "hash"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				m := requireStatus(t, env.call(tc.method, tc.path, tok, tc.body), http.StatusBadRequest, domain.InvalidArgument)
				require.Contains(t, fieldViolations(t, m), tc.field)
			})
		}
		r := env.do(http.MethodPost, base+"/import?format=HASH_LIST_IMPORT_FORMAT_NOPE", tok, "text/plain", strings.Repeat("a", 32))
		require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
		r = env.do(http.MethodPost, base+"/import", tok, "text/plain", "\n# only a comment\n")
		require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
		require.Contains(t, string(r.Body), "file")
		require.Equal(t, http.StatusNotFound, env.call(http.MethodGet, "/v1/hash-lists/nope", tok, "").Status)
	})
}
