package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
)

// spanRules are one rule per kind of match: exact, fuzzy, REGEX, and an exact
// CJK phrase; a fifth rule that cannot fire on the texts below, and a sixth
// whose NOT part must not be flagged.
const spanRules = `=("kill")
~("kill")
REGEX("[0-9]{3}-[0-9]{4}")
=("杀了你")
=("never said")
=("dead") AND NOT =("song")
`

// spanCase is a text and, per rule of spanRules, the matched texts its spans
// must carry, in order; each must slice the text, in code points, at its
// position (the n-th occurrence of the string in the text).
type spanCase struct {
	text string
	want [6][]string
}

var spanCases = []spanCase{
	// After an emoji (one code point, four bytes, two UTF-16 units).
	{"😀 I will kill you, dead", [6][]string{{"kill"}, {"kill"}, nil, nil, nil, {"dead"}}},
	// Combining marks are code points of their own; the fuzzy match is
	// obfuscated.
	{"e\u0301e\u0301 I will k.i.l.l you", [6][]string{nil, {"k.i.l.l"}, nil, nil, nil, nil}},
	// CJK, then a REGEX match after it.
	{"我要杀了你 call 555-1234", [6][]string{nil, nil, {"555-1234"}, {"杀了你"}, nil, nil}},
	// Text after astral characters (a musical symbol, a ZWJ family) and
	// several matches of one rule.
	{"𝄞👩‍👩‍👧 KILL and kill, 555-0000 dead song", [6][]string{{"KILL", "kill"}, {"KILL", "kill"}, {"555-0000"}, nil, nil, nil}},
}

// requireSpans checks the spans of the assertions of a report's only section
// against c, and that each slices c.text to its text.
func requireSpans(t *testing.T, c spanCase, rep *client.EvaluationReport) {
	t.Helper()
	secs := rep.SectionEvaluationReports
	require.Len(t, secs, 1)
	as := secs[0].AssertionEvaluationReports
	require.Len(t, as, len(c.want))
	runes := []rune(c.text)
	for i, want := range c.want {
		if want == nil {
			require.Nil(t, as[i].Spans, "rule %d on %q flags nothing", i, c.text)
			continue
		}
		require.NotNil(t, as[i].Spans, "rule %d on %q", i, c.text)
		spans := *as[i].Spans
		require.Len(t, spans, len(want), "rule %d on %q: %+v", i, c.text, spans)
		from := 0
		for k, s := range spans {
			at := from + strings.Index(c.text[from:], want[k])
			require.GreaterOrEqual(t, at, from, "%q not in %q", want[k], c.text)
			start := utf8.RuneCountInString(c.text[:at])
			require.Equal(t, client.FlaggedSpan{Start: int32(start), End: int32(start + utf8.RuneCountInString(want[k])), Text: want[k]}, s,
				"rule %d span %d on %q", i, k, c.text)
			require.Equal(t, s.Text, string(runes[s.Start:s.End]), "the offsets slice the text to the span's text")
			from = at + len(want[k])
		}
	}
}

// requireHitSpans checks the spans of a hit: those of the section's rules,
// each once, in text order.
func requireHitSpans(t *testing.T, c spanCase, hit client.LabelHit) {
	t.Helper()
	var want []client.FlaggedSpan
	for _, w := range c.want {
		from := 0
		for _, m := range w {
			at := from + strings.Index(c.text[from:], m)
			start := int32(utf8.RuneCountInString(c.text[:at]))
			want = append(want, client.FlaggedSpan{Start: start, End: start + int32(utf8.RuneCountInString(m)), Text: m})
			from = at + len(m)
		}
	}
	slices.SortFunc(want, func(a, b client.FlaggedSpan) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End))
	})
	want = slices.Compact(want)
	require.NotNil(t, hit.Spans, "hit of %q", c.text)
	require.Equal(t, want, *hit.Spans, "hit of %q", c.text)
}

func spanItems() []client.ContentData {
	items := make([]client.ContentData, len(spanCases))
	for i, c := range spanCases {
		items[i] = textItem(c.text, nil)
	}
	return items
}

// TestFlaggedSpansJobs: a policy's reports carry the spans of exact, fuzzy and
// REGEX matches in code points of the submitted text, through synchronous and
// queued jobs and the stream, and its text hits carry them too.
func TestFlaggedSpansJobs(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.Client(env.PolicyFirst.Token)
		pr, err := c.CreatePolicyWithResponse(ctx, client.CreatePolicyRequest{PolicyKey: "spans", Text: "LABEL \"Threat\" {\n" + spanRules + "}\n"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, pr.StatusCode(), "%s", pr.Body)
		policyID := pr.JSON200.Policy.PolicyId

		checkJob := func(t *testing.T, j client.Job) {
			require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status)
			require.Len(t, *j.Results, len(spanCases))
			for i, r := range *j.Results {
				requireSpans(t, spanCases[i], r.Report)
			}
			hr, err := c.ListJobLabelHitsWithResponse(ctx, j.JobUuid, nil)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, hr.StatusCode(), "%s", hr.Body)
			specChecked(t, hr.HTTPResponse, hr.Body)
			hits := *hr.JSON200.Labels
			require.Len(t, hits, len(spanCases), "one TRUE section per text")
			for i, h := range hits {
				require.Equal(t, (*j.Results)[i].JobResultId, h.JobResultId)
				requireHitSpans(t, spanCases[i], h)
			}
		}

		t.Run("sync", func(t *testing.T) {
			j := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true), ContentData: spanItems()})
			checkJob(t, j)
			// What GET returns is what was stored.
			checkJob(t, env.waitForJob(env.PolicyFirst.Token, j.JobUuid))
		})
		t.Run("async", func(t *testing.T) {
			j := env.submit(env.PolicyFirst.Token, client.CreateJobRequest{PolicyId: policyID, ContentData: spanItems()})
			checkJob(t, env.waitForJob(env.PolicyFirst.Token, j.JobUuid))
		})
		t.Run("stream", func(t *testing.T) {
			doc, _ := loadSpec(t)
			lineSchema := doc.Components.Schemas["StreamJobsMessage"].Value
			body, err := json.Marshal(client.StreamJobsRequest{PolicyId: policyID, ContentData: spanItems()})
			require.NoError(t, err)
			resp, rd := env.stream(env.PolicyFirst.Token, string(body))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			n := 0
			for {
				line, err := rd.ReadBytes('\n')
				if len(line) == 0 && err != nil {
					break
				}
				var v any
				require.NoError(t, json.Unmarshal(line, &v))
				require.NoError(t, lineSchema.VisitJSON(v), "line %s", line)
				var msg client.StreamJobsMessage
				dec := json.NewDecoder(bytes.NewReader(line))
				require.NoError(t, dec.Decode(&msg))
				require.NotNil(t, msg.Result, "line %s", line)
				requireSpans(t, spanCases[n], msg.Result.PolicyEvaluationReport)
				n++
			}
			require.Equal(t, len(spanCases), n)
		})
	})
}

// TestFlaggedSpansLabels: label evaluation reports and the hits of its jobs
// carry the same spans.
func TestFlaggedSpansLabels(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		c := env.Client(env.LabelFirst.Token)
		lr, err := c.CreateLabelWithResponse(ctx, client.CreateLabelRequest{Name: "Threat"})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, lr.StatusCode(), "%s", lr.Body)
		vr, err := c.CreateLabelVersionWithResponse(ctx, lr.JSON200.Label.LabelId, client.CreateLabelVersionRequest{Text: spanRules})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, vr.StatusCode(), "%s", vr.Body)
		version := vr.JSON200.LabelVersion.LabelVersionId

		for _, sc := range spanCases {
			// Twice: the second answer comes from the evaluation cache.
			for range 2 {
				er, err := c.EvaluateLabelsWithResponse(ctx, client.EvaluateLabelsRequest{
					ContentData: textItem(sc.text, nil), LabelVersionIds: []string{version},
				})
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, er.StatusCode(), "%s", er.Body)
				specChecked(t, er.HTTPResponse, er.Body)
				res := (er.JSON200.Results)[0]
				require.Equal(t, client.OUTCOMETRUE, res.Evaluation.Outcome)
				requireSpans(t, sc, res.Evaluation.Report)

				hr, err := c.ListJobLabelHitsWithResponse(ctx, *res.JobUuid, nil)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, hr.StatusCode(), "%s", hr.Body)
				specChecked(t, hr.HTTPResponse, hr.Body)
				require.Len(t, *hr.JSON200.Labels, 1)
				requireHitSpans(t, sc, (*hr.JSON200.Labels)[0])
			}
		}
	})
}

// TestFlaggedSpansOCR: an image's spans are in the text OCR read from it; the
// matched text says what was read.
func TestFlaggedSpansOCR(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		if err := env.Main.OCR.Available(); err != nil {
			t.Skipf("OCR is not available: %v", err)
		}
		tok := env.PolicyFirst.Token
		img := testPNG(t, "I WILL KILL YOU")
		policyID := env.imagePolicy(tok, "ocr", img)
		j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			Options:     &client.EvaluationOptions{Options: &client.StringMap{"ocr": "true"}},
			ContentData: []client.ContentData{{Image: &img}}})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status, "%+v", j.Error)
		var threat client.SectionReport
		for _, s := range (*j.Results)[0].Report.SectionEvaluationReports {
			if s.Name == "Threat" {
				threat = s
			}
		}
		require.Equal(t, client.OUTCOMETRUE, threat.Result)
		spans := *(threat.AssertionEvaluationReports)[0].Spans
		require.Len(t, spans, 1)
		s := spans[0]
		require.True(t, strings.EqualFold("kill you", s.Text), "OCR read %q", s.Text)
		require.Equal(t, int32(utf8.RuneCountInString(s.Text)), s.End-s.Start)
		require.Nil(t, s.TranscriptStartMs, "an image's text is not a transcript")

		hr, err := env.Client(tok).ListJobLabelHitsWithResponse(context.Background(), j.JobUuid, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, hr.StatusCode(), "%s", hr.Body)
		for _, h := range *hr.JSON200.Labels {
			require.Equal(t, client.MODALITYIMAGE, h.Modality)
			if h.Label == "Threat" {
				require.Equal(t, []client.FlaggedSpan{s}, *h.Spans)
			} else {
				require.Nil(t, h.Spans, "a HASH match has no span")
			}
		}
	})
}

// TestFlaggedSpansTranscript: a video's report and hits flag a caption's
// text, in code points of the cue's text, and name the cue.
func TestFlaggedSpansTranscript(t *testing.T) {
	requireFFmpeg(t)
	video := filepath.Join(t.TempDir(), "v.mp4")
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error",
		"-f", "lavfi", "-i", "color=c=red:s=160x120:d=4:r=10", "-f", "lavfi", "-i", "sine=frequency=440:duration=4",
		"-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", video).CombinedOutput()
	require.NoError(t, err, "%s", out)
	data, err := os.ReadFile(video)
	require.NoError(t, err)
	// The cue's markup is removed before evaluation: the offsets count in
	// "😀 e\u0301 i will kill you".
	captions := "WEBVTT\n\n00:00:00.500 --> 00:00:01.500\nhello there\n\n00:00:02.500 --> 00:00:03.500\n😀 e\u0301 <b>i will kill you</b>\n"
	want := []client.FlaggedSpan{{Start: 5, End: 20, Text: "i will kill you", TranscriptStartMs: ptr("2500"), TranscriptEndMs: ptr("3500")}}

	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		policyID := env.createPolicy(tok, "video")
		j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{Video: &data, Captions: &captions}}})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status, "%+v", j.Error)
		threat := ((*j.Results)[0].Report.SectionEvaluationReports)[0]
		require.Equal(t, "Threat", threat.Name)
		require.Equal(t, want, *(threat.AssertionEvaluationReports)[0].Spans)

		r, err := env.Client(tok).ListJobLabelHitsWithResponse(context.Background(), j.JobUuid, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.StatusCode(), "%s", r.Body)
		specChecked(t, r.HTTPResponse, r.Body)
		require.Len(t, *r.JSON200.Labels, 1)
		require.Equal(t, want, *(*r.JSON200.Labels)[0].Spans)
	})
}
