package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/contenteval/contenteval/internal/testwait"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contenteval/contenteval/persistence/persistencetest"
	"github.com/stretchr/testify/require"
)

// pixelLoad is one run of TestImageJobsMemory: jobs jobs of images images
// each, every image side x side pixels, on a server whose decode budget is
// budget bytes.
type pixelLoad struct {
	name                string
	jobs, images, side  int
	budget              int64
	workers             int
	within              time.Duration // for the jobs to complete
	onlyWithEnvVariable string        // run only when this variable is set (the full scale is slow)
}

// TestImageJobsMemory runs concurrent jobs of large images on a real server
// process and reads its peak RSS (VmHWM). Decoded pixels are bounded by the
// process-wide decode budget for as long as they are in memory, released
// pixels included until a collection has freed them; everything else an
// image job holds is bounded like any request, 8x the bytes sent plus
// 64 MiB. Before, a released image's pixels stayed in the heap until the
// collector ran, which serve's GOGC of 400 put off until the heap was five
// times its live size: 4 jobs of 15 images of 50 MP peaked at 4.96 GB
// against a 1 GiB budget.
func TestImageJobsMemory(t *testing.T) {
	skipWithoutPeakRSS(t, "builds the binary and decodes hundreds of megapixels")
	bin := buildBinary(t)
	for _, load := range []pixelLoad{
		{name: "4 jobs of 8 images of 8 MP, 128 MiB budget", jobs: 4, images: 8, side: 2828, budget: 128 << 20, workers: 8,
			within: 10 * time.Minute},
		{name: "4 jobs of 15 images of 50 MP, default budget", jobs: 4, images: 15, side: 7071, budget: 1 << 30, workers: 8,
			within: time.Hour, onlyWithEnvVariable: "CONTENTEVAL_TEST_FULL_SCALE"},
	} {
		t.Run(load.name, func(t *testing.T) {
			if v := load.onlyWithEnvVariable; v != "" && os.Getenv(v) == "" {
				t.Skipf("set %s to run it", v)
			}
			for _, b := range persistencetest.Backends(t) {
				// One backend at a time: the peak of each process is its own,
				// but two decoding at once would share the machine's cores.
				t.Run(b.Name, func(t *testing.T) { runPixelLoad(t, bin, b.Name, load) })
			}
		})
	}
}

func runPixelLoad(t *testing.T, bin, backend string, load pixelLoad) {
	dbURL := ""
	if backend == persistencetest.Postgres {
		dbURL, _, _ = privateSchema(t, "ce_pixels_")
	}
	var policyID string
	db := setupMemoryDB(t, "pixels", dbURL, createPolicy(t, "main", testPolicyText, &policyID))
	dir, dbURL, keyFile, token := db.dir, db.dbURL, db.keyFile, db.token

	base := gradientPNG(t, load.side)
	bodies := make([]string, load.jobs)
	sent := int64(0)
	for j := range bodies {
		items := make([]string, load.images)
		for i := range items {
			// Distinct bytes, so no image is a repeat of another.
			items[i] = `{"image":"` + base64.StdEncoding.EncodeToString(withTextChunk(base, fmt.Sprintf("job %d image %d", j, i))) + `"}`
		}
		bodies[j] = `{"policyId":"` + policyID + `","contentData":[` + strings.Join(items, ",") + `]}`
		sent += int64(len(bodies[j]))
	}

	srv := startProcess(t, bin, dir, dbURL, keyFile, "--role=all", "--job-workers="+strconv.Itoa(load.workers),
		"--image-decode-budget="+strconv.FormatInt(load.budget, 10), "--item-deadline=5m")
	warm := srv.post(token, `{"policyId":"`+policyID+`","waitForCompletion":true,"contentData":[{"image":"`+
		base64.StdEncoding.EncodeToString(gradientPNG(t, 64))+`"}]}`)
	require.Equal(t, http.StatusOK, warm.status, "%s", warm.body)
	before := srv.peakRSS(t)

	created := make([]memResult, load.jobs)
	var wg sync.WaitGroup
	for j := range bodies {
		wg.Go(func() { created[j] = srv.post(token, bodies[j]) })
	}
	wg.Wait()
	for _, r := range created {
		require.Equal(t, http.StatusOK, r.status, "%.300s", r.body)
		var created struct{ Job struct{ JobUuid string } }
		require.NoError(t, json.Unmarshal(r.body, &created))
		srv.waitForJob(t, token, created.Job.JobUuid, load.within)
	}
	after := srv.peakRSS(t)
	growth := after - before
	bound := load.budget + 8*sent + 64<<20
	t.Logf("%s: sent %.1f MiB, budget %.0f MiB, peak RSS %.0f -> %.0f MiB, growth %.0f MiB (bound %.0f MiB)",
		backend, mib(sent), mib(load.budget), mib(before), mib(after), mib(growth), mib(bound))
	require.Less(t, growth, bound, "peak RSS grew %.0f MiB for %d jobs of %d images of %.0f MP",
		mib(growth), load.jobs, load.images, float64(load.side*load.side)/1e6)
}

// waitForJob polls the job until it is completed; any other end fails t.
func (s *memServer) waitForJob(t *testing.T, token, id string, within time.Duration) {
	t.Helper()
	testwait.For(t, within, "job "+id+" to complete", func() (bool, error) {
		req, err := http.NewRequest(http.MethodGet, s.url+"/v1/jobs/"+id, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := specClient.Do(req)
		require.NoError(t, err)
		var got struct {
			Job struct {
				Status string
				Error  json.RawMessage
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		job := got.Job
		resp.Body.Close()
		require.NoError(t, err)
		switch job.Status {
		case "JOB_STATUS_COMPLETED":
			return true, nil
		case "JOB_STATUS_FAILED", "JOB_STATUS_CANCELED":
			t.Fatalf("job %s ended %s: %s", id, job.Status, job.Error)
		}
		return false, fmt.Errorf("still %s", job.Status)
	})
}

// gradientPNG encodes a side x side RGBA gradient: it decodes to 4 bytes a
// pixel but compresses to little, as a large flat graphic does.
func gradientPNG(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	for y := range side {
		row := img.Pix[y*img.Stride:]
		for x := range side {
			c := color.RGBA{R: uint8(x * 255 / side), G: uint8(y * 255 / side), B: 128, A: 255}
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, c.A
		}
	}
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img))
	return buf.Bytes()
}

// withTextChunk returns a copy of a PNG with a tEXt chunk before its IEND.
func withTextChunk(p []byte, text string) []byte {
	const iendLen = 12
	data := append([]byte("Comment\x00"), text...)
	chunk := appendUint32(nil, uint32(len(data)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, data...)
	chunk = appendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := append([]byte(nil), p[:len(p)-iendLen]...)
	out = append(out, chunk...)
	return append(out, p[len(p)-iendLen:]...)
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
