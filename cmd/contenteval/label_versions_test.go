package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// requirePlanFigures checks the figures of the compiled plan of
// labelRule with a global context: three signals, one nested rule, tokens.
func requirePlanFigures(t *testing.T, v client.LabelVersion) {
	t.Helper()
	require.EqualValues(t, 3, v.SignalCount)
	require.EqualValues(t, 4, v.ComplexityScore)
	tc := v.TokenCountsV2
	require.Positive(t, tc.DslTokenCount)
	require.Positive(t, tc.GlobalContextTokens)
	require.Positive(t, tc.SignalTokens)
	require.Positive(t, tc.SignalSpecialTokens)
	require.Positive(t, tc.ContentSpecialTokens)
	require.Equal(t, tc.SignalTokens+tc.SignalSpecialTokens, v.TotalSignalTokens)
}

// requireVersionPages checks the listing of label id's three versions:
// ascending, in pages, its page tokens refused for another label (otherID)
// or another listing.
func requireVersionPages(t *testing.T, env *testEnv, id, otherID string) {
	t.Helper()
	ctx := context.Background()
	tok := env.LabelFirst.Token
	c := env.Client(tok)
	list, err := c.ListLabelVersionsWithResponse(ctx, id, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, list.StatusCode())
	var seqs []float32
	for _, v := range list.JSON200.LabelVersions {
		seqs = append(seqs, v.SequentialVersion)
	}
	require.Equal(t, []float32{1, 2, 3}, seqs)
	require.Nil(t, list.JSON200.NextPageToken)
	p1 := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions?page_size=2", tok, ""))
	require.Len(t, p1.LabelVersions, 2)
	require.NotNil(t, p1.NextPageToken)
	tk := url.QueryEscape(*p1.NextPageToken)
	p2 := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions?page_size=2&page_token="+tk, tok, ""))
	require.Len(t, p2.LabelVersions, 1)
	require.EqualValues(t, 3, p2.LabelVersions[0].SequentialVersion)
	require.Nil(t, p2.NextPageToken)
	p3 := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions?page_size=3", tok, ""))
	require.Nil(t, p3.NextPageToken, "exactly one page")
	r := env.call(http.MethodGet, "/v1/labels/"+otherID+"/versions?page_token="+tk, tok, "")
	m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
	require.Contains(t, fieldViolations(t, m), "page_token")
	r = env.call(http.MethodGet, "/v1/labels?page_token="+tk, tok, "")
	requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
	r = env.call(http.MethodGet, "/v1/labels/"+id+"/versions?page_size=-3", tok, "")
	requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
	for _, size := range []string{"0", "1000", "1001"} {
		p := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions?page_size="+size, tok, ""))
		require.Len(t, p.LabelVersions, 3, size)
	}
}

func TestLabelVersions_CreateGetList(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.LabelFirst.Token
		c := env.Client(tok)
		l := env.createLabel(tok, map[string]any{"name": "Threat"})
		id := l.LabelId

		threshold, bundle, bypass := 0.7, int32(8), true
		level := client.IMAGEDETAILLEVELHIGH
		gc := "Be careful with sarcasm."
		desc := "first"
		blob := []byte{0, 1, 2, 0xff}
		res, err := c.CreateLabelVersionWithResponse(ctx, id, client.CreateLabelVersionJSONRequestBody{
			Text: labelRule, Description: &desc, GlobalContext: &gc, Blob: &blob,
			LabelEvalOptions: &client.LabelEvalOptions{Threshold: &threshold, BundleSize: &bundle, BypassCache: &bypass, ImageDetailLevel: &level},
		})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode(), "%s", res.Body)
		v1 := res.JSON200.LabelVersion
		require.NotEmpty(t, v1.LabelVersionId)
		require.Equal(t, id, v1.LabelId)
		require.EqualValues(t, 1, v1.SequentialVersion)
		require.Equal(t, labelRule, v1.Text)
		require.Equal(t, desc, v1.Description)
		require.Equal(t, gc, v1.GlobalContext)
		require.Equal(t, blob, *v1.Blob)
		require.Equal(t, env.LabelFirst.ID, v1.CreatedById)
		require.False(t, v1.Expunged)
		require.Nil(t, v1.ParentLabelVersionId)
		require.Equal(t, threshold, *v1.LabelEvalOptions.Threshold)
		require.Equal(t, bundle, *v1.LabelEvalOptions.BundleSize)
		require.True(t, *v1.LabelEvalOptions.BypassCache)
		require.Equal(t, level, *v1.LabelEvalOptions.ImageDetailLevel)
		require.Nil(t, v1.LabelEvalOptions.Stack)
		// Figures from the compiled plan: three signals, one nested rule.
		requirePlanFigures(t, v1)

		// GET one returns what POST returned.
		got := decodeAs[client.LabelVersionResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions/"+v1.LabelVersionId, tok, "")).LabelVersion
		require.Equal(t, v1, got)

		// A second version, with the first as parent; a LABEL block works too.
		env.Clock.Add(time.Second)
		v2 := env.createVersion(tok, id, map[string]any{
			"text": "LABEL \"Threat\": \"remove\" {\n  =(\"i will hurt you\")\n}", "parentLabelVersionId": v1.LabelVersionId,
		})
		require.EqualValues(t, 2, v2.SequentialVersion)
		require.Equal(t, v1.LabelVersionId, *v2.ParentLabelVersionId)
		require.EqualValues(t, 0, v2.TokenCountsV2.GlobalContextTokens)
		require.Nil(t, v2.Blob)

		// The parent must be a version of the same label.
		other := env.createLabel(tok, map[string]any{"name": "Other"})
		ov := env.createVersion(tok, other.LabelId, map[string]any{"text": "=(\"x\")"})
		require.EqualValues(t, 1, ov.SequentialVersion, "numbering is per label")
		for _, parent := range []string{ov.LabelVersionId, "nope"} {
			r := env.call(http.MethodPost, "/v1/labels/"+id+"/versions", tok, mustJSON(t, map[string]any{"text": labelRule, "parentLabelVersionId": parent}))
			m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
			require.Contains(t, fieldViolations(t, m), "parentLabelVersionId")
		}
		// A failed creation leaves no gap.
		v3 := env.createVersion(tok, id, map[string]any{"text": labelRule})
		require.EqualValues(t, 3, v3.SequentialVersion)

		// Option validation.
		r := env.call(http.MethodPost, "/v1/labels/"+id+"/versions", tok, `{"text":"=(\"a\")","labelEvalOptions":{"threshold":1.5}}`)
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		r = env.call(http.MethodPost, "/v1/labels/"+id+"/versions", tok, `{"text":""}`)
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)

		// List: ascending, pageable, tokens bound to the label.
		requireVersionPages(t, env, id, other.LabelId)

		// A label without versions lists none; unknown ids are NOT_FOUND.
		empty := env.createLabel(tok, map[string]any{"name": "Empty"})
		e := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+empty.LabelId+"/versions", tok, ""))
		require.NotNil(t, e.LabelVersions)
		require.Empty(t, e.LabelVersions)
		requireStatus(t, env.call(http.MethodGet, "/v1/labels/nope/versions", tok, ""), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodPost, "/v1/labels/nope/versions", tok, `{"text":"=(\"a\")"}`), http.StatusNotFound, domain.NotFound)
		requireStatus(t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions/nope", tok, ""), http.StatusNotFound, domain.NotFound)
		// A version is only found under its own label.
		requireStatus(t, env.call(http.MethodGet, "/v1/labels/"+other.LabelId+"/versions/"+v1.LabelVersionId, tok, ""), http.StatusNotFound, domain.NotFound)

		// Versions are immutable: renaming, disabling, archiving the label
		// or PATCHing rule text leaves them exactly as they were.
		env.call(http.MethodPatch, "/v1/labels/"+id, tok, `{"name":"Renamed","disabled":true,"text":"=(\"other\")"}`)
		env.call(http.MethodPost, "/v1/labels/"+id+"/archive", tok, "")
		after := decodeAs[client.LabelVersionResponse](t, env.call(http.MethodGet, "/v1/labels/"+id+"/versions/"+v1.LabelVersionId, tok, "")).LabelVersion
		require.Equal(t, v1, after)
		// Archived and disabled labels still take new versions.
		v4 := env.createVersion(tok, id, map[string]any{"text": labelRule})
		require.EqualValues(t, 4, v4.SequentialVersion)
	})
}

func TestLabelVersions_CompileErrors(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		l := env.createLabel(tok, map[string]any{"name": "Threat"})
		r := env.call(http.MethodPost, "/v1/labels/"+l.LabelId+"/versions", tok, mustJSON(t, map[string]any{"text": "=(\"a\") [WIBBLE] =(\"b\")\n)))"}))
		m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
		var errs []map[string]any
		for _, d := range m["details"].([]any) {
			d := d.(map[string]any)
			if d["@type"] == "type.googleapis.com/contenteval.CompilationErrors" {
				for _, e := range d["errors"].([]any) {
					errs = append(errs, e.(map[string]any))
				}
			}
		}
		require.Len(t, errs, 2, "every error, not just the first: %s", r.Body)
		require.EqualValues(t, 1, errs[0]["line"])
		require.EqualValues(t, 8, errs[0]["column"])
		require.Contains(t, errs[0]["message"], "WIBBLE")
		require.EqualValues(t, 2, errs[1]["line"])
		require.EqualValues(t, 1, errs[1]["column"])
		require.NotEmpty(t, errs[1]["message"])
		// Nothing was created, so the next version is still 1.
		v := env.createVersion(tok, l.LabelId, map[string]any{"text": labelRule})
		require.EqualValues(t, 1, v.SequentialVersion)
		// A text over 64 KiB is a compile error too.
		big := make([]byte, 65*1024)
		for i := range big {
			big[i] = 'a'
		}
		r = env.call(http.MethodPost, "/v1/labels/"+l.LabelId+"/versions", tok, mustJSON(t, map[string]any{"text": string(big)}))
		requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
	})
}

// TestLabelVersions_ConcurrentCreation: 50 concurrent creations get versions
// 1..50, no gaps, no duplicates.
func TestLabelVersions_ConcurrentCreation(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.LabelFirst.Token
		l := env.createLabel(tok, map[string]any{"name": "Busy"})
		c := env.Client(tok)
		const n = 50
		seqs := make([]int, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res, err := c.CreateLabelVersionWithResponse(context.Background(), l.LabelId,
					client.CreateLabelVersionJSONRequestBody{Text: fmt.Sprintf("=(\"word%d\")", i)})
				if err != nil {
					errs[i] = err
					return
				}
				if res.StatusCode() != http.StatusOK {
					errs[i] = fmt.Errorf("status %d: %s", res.StatusCode(), res.Body)
					return
				}
				seqs[i] = int(res.JSON200.LabelVersion.SequentialVersion)
			}()
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		sort.Ints(seqs)
		want := make([]int, n)
		for i := range want {
			want[i] = i + 1
		}
		require.Equal(t, want, seqs)
		// The list agrees, in order.
		list := decodeAs[client.ListLabelVersionsResponse](t, env.call(http.MethodGet, "/v1/labels/"+l.LabelId+"/versions?page_size=1000", tok, ""))
		require.Len(t, list.LabelVersions, n)
		for i, v := range list.LabelVersions {
			require.EqualValues(t, i+1, v.SequentialVersion)
		}
	})
}
