package media

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contenteval/contenteval/domain"
)

// benchVideo generates (once per directory) the issue-8 benchmark input: a
// 10-minute 1280x720 25 fps H.264 video (veryfast, CRF 26, VBV-capped at
// 4 Mbit/s) with an AAC tone, cycling six visually distinct synthetic sources
// of 10 s each (60 scenes), and WebVTT captions with a cue every 3 s, every
// tenth cue containing a phrase the policy hits.
func benchVideo(b *testing.B, tools Tools, dir string) (string, string) {
	b.Helper()
	path := filepath.Join(dir, "bench-10min-720p.mp4")
	var vtt strings.Builder
	vtt.WriteString("WEBVTT\n\n")
	for i := 0; i < 200; i++ {
		text := fmt.Sprintf("caption number %d about the weather", i)
		if i%10 == 0 {
			text = fmt.Sprintf("caption %d: I will kill you", i)
		}
		start := i * 3 // seconds; every cue ends 2.5 s after it starts
		fmt.Fprintf(&vtt, "00:%02d:%02d.000 --> 00:%02d:%02d.500\n%s\n\n", start/60, start%60, (start+2)/60, (start+2)%60, text)
	}
	if _, err := os.Stat(path); err == nil {
		return path, vtt.String()
	}
	sources := []string{
		"smptehdbars=s=1280x720:r=25", "testsrc2=s=1280x720:r=25", "mandelbrot=s=1280x720:r=25",
		"rgbtestsrc=s=1280x720:r=25", "cellauto=s=1280x720:r=25:rule=110", "life=s=1280x720:r=25:mold=10:ratio=0.1",
	}
	var list strings.Builder
	for i, src := range sources {
		clip := filepath.Join(dir, fmt.Sprintf("clip%d.mp4", i))
		ffmpeg(b, tools, "-f", "lavfi", "-i", src+",trim=duration=10,format=yuv420p",
			"-c:v", "libx264", "-preset", "veryfast", "-crf", "26", "-maxrate", "4M", "-bufsize", "8M", "-g", "250", clip)
	}
	for r := 0; r < 10; r++ {
		for i := range sources {
			fmt.Fprintf(&list, "file clip%d.mp4\n", i)
		}
	}
	listPath := filepath.Join(dir, "list.txt")
	if err := os.WriteFile(listPath, []byte(list.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	ffmpeg(b, tools, "-f", "concat", "-safe", "0", "-i", listPath, "-f", "lavfi", "-i", "sine=f=440:d=600",
		"-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac", "-b:a", "128k", "-shortest", path)
	return path, vtt.String()
}

// BenchmarkAnalyze10Min720p processes the benchmark video end to end: stage,
// probe, scene detection, 60 frame extractions with PDQ and evaluation, 200
// caption chunks, hits. Run with
//
//	CONTENTEVAL_MEDIA_BENCH_DIR=/tmp/mbench go test -run '^$' -bench Analyze10Min -benchtime 1x ./media/
//
// (the directory caches the generated video between runs). It reports the
// wall time per run, the CPU seconds of the tools, the peak RSS of the
// largest tool and of this process.
func BenchmarkAnalyze10Min720p(b *testing.B) {
	tools := requireTools(b)
	dir := os.Getenv("CONTENTEVAL_MEDIA_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path, vtt := benchVideo(b, tools, dir)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	eval := compile(b, `LABEL "Violence" { =("kill") }
LABEL "KnownBad" { HASH("pdq:0000000000000000000000000000000000000000000000000000000000000000", 31) }`)
	a := newAnalyzer(b, tools, Config{}, nil)
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	b.ResetTimer()
	start := time.Now()
	var got *domain.MediaAnalysis
	for i := 0; i < b.N; i++ {
		got, err = a.AnalyzeMedia(context.Background(), domain.MediaInput{Kind: domain.MediaVideo, Data: data, Captions: vtt, HasCaptions: true}, nil, eval)
		if err != nil {
			b.Fatal(err)
		}
	}
	wall := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	var after, self syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	cpu := func(r syscall.Rusage) float64 {
		return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
	}
	b.ReportMetric(wall.Seconds(), "wall-s/op")
	b.ReportMetric((cpu(after)-cpu(before))/float64(b.N), "tools-cpu-s/op")
	b.ReportMetric(float64(after.Maxrss)/1024, "tools-peak-rss-MiB")
	b.ReportMetric(float64(self.Maxrss)/1024, "self-peak-rss-MiB")
	b.ReportMetric(float64(len(got.Segments)), "segments")
	b.ReportMetric(float64(len(got.Hits)), "hits")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MiB")
}
