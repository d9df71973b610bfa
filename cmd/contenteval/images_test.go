package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/contenteval/contenteval/domain/imaging"
	"github.com/contenteval/contenteval/gen/client"
	"github.com/stretchr/testify/require"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// testPNG renders text large on a white background with a gradient, so its
// PDQ has quality.
func testPNG(t *testing.T, text string) []byte {
	t.Helper()
	face := basicfont.Face7x13
	small := image.NewRGBA(image.Rect(0, 0, 160, 30))
	for y := 0; y < 30; y++ {
		for x := 0; x < 160; x++ {
			small.Set(x, y, color.RGBA{255, uint8(200 + x/4), uint8(200 + y), 255})
		}
	}
	d := &font.Drawer{Dst: small, Src: image.NewUniform(color.Black), Face: face, Dot: fixed.P(6, 20)}
	d.DrawString(text)
	const scale = 6
	big := image.NewRGBA(image.Rect(0, 0, 160*scale, 30*scale))
	for y := 0; y < 30*scale; y++ {
		for x := 0; x < 160*scale; x++ {
			big.Set(x, y, small.At(x/scale, y/scale))
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, big))
	return b.Bytes()
}

// imagePolicy flags an image by its md5 (a HASH signal) and text by phrase.
func (e *testEnv) imagePolicy(token, key string, img []byte) string {
	e.t.Helper()
	sum := md5.Sum(img)
	text := fmt.Sprintf(`LABEL "Known": "remove" {
    HASH("md5:%s")
}
LABEL "Threat": "remove" {
    =("kill you")
}
`, hex.EncodeToString(sum[:]))
	r, err := e.Client(token).CreatePolicyWithResponse(context.Background(), client.CreatePolicyRequest{PolicyKey: key, Text: text})
	require.NoError(e.t, err)
	require.Equal(e.t, http.StatusOK, r.StatusCode(), "%s", r.Body)
	return r.JSON200.Policy.PolicyId
}

func labelOutcome(t *testing.T, j client.Job, label string) client.Outcome {
	t.Helper()
	require.NotNil(t, j.Results)
	for _, s := range (*j.Results)[0].Report.SectionEvaluationReports {
		if s.Name == label {
			return s.Result
		}
	}
	t.Fatalf("no section %q", label)
	return ""
}

func TestImageJobs(t *testing.T) {
	forEachBackend(t, func(c *Config) { c.AllowPrivateURLs = true }, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		img := testPNG(t, "I WILL KILL YOU")
		other := testPNG(t, "HELLO FRIEND")
		policyID := env.imagePolicy(tok, "images", img)

		// An inline image: HASH signal TRUE, an image hit; text signals FAIL
		// without OCR (never a silent FALSE).
		j := env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{Image: &img}}})
		require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status, "%+v", j.Error)
		require.Equal(t, client.OUTCOMETRUE, labelOutcome(t, j, "Known"))
		require.Equal(t, client.OUTCOMEFAILED, labelOutcome(t, j, "Threat"))
		require.Equal(t, imaging.ContentHash(img), *(*j.Results)[0].ContentHash)
		hits, err := env.Client(tok).ListJobLabelHitsWithResponse(context.Background(), j.JobUuid, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, hits.StatusCode(), "%s", hits.Body)
		require.Len(t, *hits.JSON200.Labels, 1)
		require.Equal(t, client.MODALITYIMAGE, (*hits.JSON200.Labels)[0].Modality)
		require.Equal(t, "Known", (*hits.JSON200.Labels)[0].Label)

		// By URL, with OCR asked for: the text signal reads the image.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(img) }))
		defer srv.Close()
		url := srv.URL + "/img.png"
		j = env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			Options:     &client.EvaluationOptions{Options: &client.StringMap{"ocr": "true"}},
			ContentData: []client.ContentData{{ImageUrl: &url}}})
		if env.Main.OCR.Available() == nil {
			require.Equal(t, client.JOBSTATUSCOMPLETED, j.Status, "%+v", j.Error)
			require.Equal(t, client.OUTCOMETRUE, labelOutcome(t, j, "Threat"), "OCR read the threat")
			require.Equal(t, imaging.ContentHash(img), *(*j.Results)[0].ContentHash, "hash of the fetched bytes")
		} else {
			require.Equal(t, client.JOBSTATUSFAILED, j.Status)
			require.Contains(t, j.Error.Message, "tesseract")
		}

		// Another image matches nothing.
		j = env.submit(tok, client.CreateJobRequest{PolicyId: policyID, WaitForCompletion: ptr(true),
			ContentData: []client.ContentData{{Image: &other}}})
		require.Equal(t, client.OUTCOMEFALSE, labelOutcome(t, j, "Known"))
	})
}

func TestImagePrecheck(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		ctx := context.Background()
		tok := env.PolicyFirst.Token
		bad := testPNG(t, "KNOWN BAD")
		sum := md5.Sum(bad)
		_, err := env.Main.Precheck.Import(ctx, "known", imaging.KindMD5, strings.NewReader(hex.EncodeToString(sum[:])+"\n"))
		require.NoError(t, err)
		require.NoError(t, env.Main.Precheck.Reload(ctx))
		policyID := env.createPolicy(tok, "p")
		badB64 := base64.StdEncoding.EncodeToString(bad)
		corrupt := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\nbroken"))
		svg := base64.StdEncoding.EncodeToString([]byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`))

		for _, tc := range []struct {
			name, image string
			failure     domain.PrecheckFailureType
			confidence  domain.PrecheckMatchConfidence
			reason      client.JobErrorReason
		}{
			{"hash list match", badB64, domain.PrecheckFailureNCMEC, domain.MatchConfidenceExact, client.JOBERRORREASONCONTENTBLOCKED},
			{"corrupt", corrupt, domain.PrecheckFailureInvalidImage, domain.MatchConfidenceUnspecified, client.JOBERRORREASONCONTENTPRECHECKFAILED},
			{"unsupported", svg, domain.PrecheckFailureUnsupportedImageFormat, domain.MatchConfidenceUnspecified, client.JOBERRORREASONCONTENTPRECHECKFAILED},
		} {
			t.Run(tc.name, func(t *testing.T) {
				// Synchronous: 499 with the precheck failure body.
				body := fmt.Sprintf(`{"policyId":%q,"waitForCompletion":true,"contentData":[{"text":"x"},{"image":%q}]}`, policyID, tc.image)
				r := env.call(http.MethodPost, "/v1/jobs", tok, body)
				m := requireStatus(t, r, 499, domain.Canceled)
				d := m["details"].([]any)[0].(map[string]any)
				require.Equal(t, string(tc.failure), d["type"])
				require.Equal(t, string(tc.confidence), d["matchConfidence"])
				raw, _ := base64.StdEncoding.DecodeString(tc.image)
				require.Equal(t, imaging.ContentHash(raw), d["details"].(map[string]any)["contentHash"])

				// Asynchronous: the job fails with the reason.
				body = strings.Replace(body, `"waitForCompletion":true`, `"waitForCompletion":false`, 1)
				r = env.call(http.MethodPost, "/v1/jobs", tok, body)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				var created client.CreateJobResponse
				require.NoError(t, json.Unmarshal(r.Body, &created))
				j := env.waitForJob(tok, created.Job.JobUuid)
				require.Equal(t, client.JOBSTATUSFAILED, j.Status)
				require.Equal(t, tc.reason, j.Error.Reason)
				require.NotContains(t, j.Error.Message, "known", "the list name is not revealed")
			})
		}

		// Every match is audited with its job; no content is kept.
		ms, err := persistenceHashLists(env.Main).ListMatches(ctx, env.PolicyFirst.ID, 10)
		require.NoError(t, err)
		require.Len(t, ms, 2)
		require.Equal(t, "known", ms[0].List)
		require.NotEmpty(t, ms[0].JobID)

		// A stream reports the entry as an error line with code 1.
		resp, rd := env.stream(tok, fmt.Sprintf(`{"policyId":%q,"contentData":[{"text":"hello"},{"image":%q}]}`, policyID, badB64))
		defer resp.Body.Close()
		var lines []map[string]any
		sc := bufio.NewScanner(rd)
		for sc.Scan() {
			var m map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
			lines = append(lines, m)
		}
		require.Len(t, lines, 2)
		require.Contains(t, lines[0], "result")
		e := lines[1]["error"].(map[string]any)
		require.EqualValues(t, 1, e["code"])
		require.Equal(t, string(domain.PrecheckFailureNCMEC), e["details"].([]any)[0].(map[string]any)["type"])
	})
}

func TestImageURLRules(t *testing.T) {
	forEachBackend(t, nil, func(t *testing.T, env *testEnv) {
		tok := env.PolicyFirst.Token
		img := testPNG(t, "X")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(img) }))
		defer srv.Close()
		policyID := env.createPolicy(tok, "p")
		// Refused when submitted, whether waited for or not.
		body := fmt.Sprintf(`{"policyId":%q,"contentData":[{"text":"x"},{"imageUrl":"ftp://example.com/x.png"}]}`, policyID)
		m := requireStatus(t, env.call(http.MethodPost, "/v1/jobs", tok, body), http.StatusBadRequest, domain.InvalidArgument)
		require.Contains(t, fieldViolations(t, m), "contentData[1].imageUrl")

		// Refused when fetched: the address is checked after resolution.
		for _, url := range []string{srv.URL + "/a.png", "http://169.254.169.254/latest/meta-data", "http://10.0.0.1/x.png"} {
			body := fmt.Sprintf(`{"policyId":%q,"waitForCompletion":true,"contentData":[{"text":"x"},{"imageUrl":%q}]}`, policyID, url)
			r := env.call(http.MethodPost, "/v1/jobs", tok, body)
			m := requireStatus(t, r, http.StatusBadRequest, domain.InvalidArgument)
			require.Contains(t, fieldViolations(t, m), "contentData[1].imageUrl", url)

			body = strings.Replace(body, `"waitForCompletion":true`, `"waitForCompletion":false`, 1)
			r = env.call(http.MethodPost, "/v1/jobs", tok, body)
			require.Equal(t, http.StatusOK, r.Status)
			var created client.CreateJobResponse
			require.NoError(t, json.Unmarshal(r.Body, &created))
			j := env.waitForJob(tok, created.Job.JobUuid)
			require.Equal(t, client.JOBERRORREASONJOBFAILED, j.Error.Reason)
			require.Contains(t, j.Error.Message, "could not be fetched")
		}
	})
}
