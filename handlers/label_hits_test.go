package handlers

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/labels"
	"github.com/contenteval/contenteval/domain/rules"
	"github.com/contenteval/contenteval/gen"
)

// The hand-written timecode formatter agrees with the obvious fmt version.
func TestTimecode(t *testing.T) {
	t.Parallel()
	for _, v := range []int64{0, 1, 999, 1000, 59_999, 60_000, 3_599_999, 3_600_000, 36_000_000, 359_999_999, 360_000_000, 123_456_789_012} {
		want := fmt.Sprintf("%02d:%02d:%02d.%03d", v/3_600_000, v/60_000%60, v/1000%60, v%1000)
		if got := timecode(v); got != want {
			t.Errorf("timecode(%d) = %s, want %s", v, got, want)
		}
	}
	// Hours do not wrap at 24; negative values, which no evaluation
	// produces, clamp to zero rather than print a sign the format has no
	// room for.
	for v, want := range map[int64]string{-5: "00:00:00.000", 100 * 3_600_000: "100:00:00.000", 4*3_600_000 + 5*60_000 + 6_007: "04:05:06.007"} {
		if got := timecode(v); got != want {
			t.Errorf("timecode(%d) = %s, want %s", v, got, want)
		}
	}
}

// The hand-written page encoder produces exactly what encoding/json makes
// of the generated types, for every kind of hit and awkward strings.
func TestLabelHitsResponseMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	i64 := func(v int64) *int64 { return &v }
	hits := []*domain.LabelHit{
		{JobResultID: "r1", Seq: 0, Label: "Threat", Modality: domain.ModalityText, Score: 1,
			Spans: []rules.TextSpan{{Start: 0, End: 4, Text: "kill"}, {Start: 5, End: 30, Text: `"\ <b>` + "\n\u2028 é 🙂 \xff"}}},
		{JobResultID: "r1", Seq: 1, Label: `quote " backslash \ <tag> & nl` + "\n\t\r\x01\u2028\u2029 é 日本 🙂 \xff", Modality: domain.ModalityAudio,
			Score: 0.123456789, StartMs: 1500, EndMs: i64(2500)},
		{JobResultID: "r2", Seq: 2, Label: "v", Modality: domain.ModalityVideo, Score: -1, StartMs: 3_600_000 * 27,
			FrameStartMs: i64(0), FrameEndMs: i64(99), TranscriptStartMs: i64(5), TranscriptEndMs: i64(7),
			Spans: []rules.TextSpan{{Start: 1, End: 2, Text: "x", Transcript: &rules.TimeRange{StartMs: 5, EndMs: 1 << 40}}}},
		{JobResultID: "r2", Seq: 3, Label: "", Modality: domain.ModalityImage, Score: 1e-9},
	}
	pages := []*labels.LabelHitPage{
		{Status: domain.JobCompleted, Hits: hits, NextPageToken: "abc.def"},
		{Status: domain.JobCompleted, Hits: []*domain.LabelHit{}},
		{Status: domain.JobRunning},
		{Status: domain.JobFailed, Error: &domain.ErrJobDeadline},
	}
	for i, p := range pages {
		want := gen.ListJobLabelHits200JSONResponse{
			Status: toAPIJobStatus(p.Status), Error: toAPIJobError(p.Error), NextPageToken: nonEmpty(p.NextPageToken),
		}
		if p.Hits != nil {
			hs := make([]gen.LabelHit, len(p.Hits))
			for i, h := range p.Hits {
				hs[i] = toAPILabelHit(h)
			}
			want.Labels = &hs
		}
		wantJSON, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		if err := (labelHitsResponse{p}).VisitListJobLabelHitsResponse(rec); err != nil {
			t.Fatal(err)
		}
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("page %d: %d %q", i, rec.Code, rec.Header().Get("Content-Type"))
		}
		var got, exp any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("page %d: not JSON: %v\n%s", i, err, rec.Body)
		}
		if err := json.Unmarshal(wantJSON, &exp); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("page %d:\n got %s\nwant %s", i, rec.Body, wantJSON)
		}
	}
	// Strings escape as encoding/json escapes them, byte for byte.
	for _, s := range []string{hits[1].Label, "plain", ""} {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
}
