package imaging

import (
	"image"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/image/draw"
)

// BenchmarkIndexNearest1M queries "nearest within 31 bits" over 1,000,000
// random hashes. "miss" queries are random (the usual case: content not in
// any list); "hit-d" queries are list hashes with d bits flipped.
func BenchmarkIndexNearest1M(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	entries := randomEntries(rng, 1_000_000)
	queries := map[string][]Hash{}
	for range 1024 {
		queries["miss"] = append(queries["miss"], randomHash(rng))
		e := entries[rng.IntN(len(entries))].Hash
		queries["hit-8"] = append(queries["hit-8"], flipBits(rng, e, 8))
		queries["hit-30"] = append(queries["hit-30"], flipBits(rng, e, 30))
	}
	for _, s := range []struct {
		name     string
		strategy IndexStrategy
	}{{"linear", StrategyLinear}, {"mih", StrategyMIH}} {
		ix, err := NewIndexWithStrategy(entries, s.strategy)
		if err != nil {
			b.Fatal(err)
		}
		for _, kind := range []string{"miss", "hit-8", "hit-30"} {
			qs := queries[kind]
			b.Run(s.name+"/"+kind, func(b *testing.B) {
				i := 0
				c0 := processCPU()
				for b.Loop() {
					ix.Nearest(qs[i%len(qs)], 31)
					i++
				}
				if cpu := processCPU() - c0; cpu > 0 {
					// Wall ns/op suffers when other processes share the
					// machine; CPU time per query does not.
					b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
				}
			})
		}
	}
}

// BenchmarkPDQ1024JPEG measures a 1024x1024 JPEG: decode and hash are
// reported separately (decode-ms, hash-ms per image) as well as together
// (ns/op), and images/s is per core for the whole path.
func BenchmarkPDQ1024JPEG(b *testing.B) {
	// A real photograph (the 1600x1004 bridge of the reference vectors)
	// scaled to 1024x1024 and encoded at quality 90, so that decode time
	// reflects photographic entropy rather than a synthetic pattern.
	photo, _, err := Decode(readTestdata(b, "pdq/bridge-mods/aaa-orig.jpg"), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	scaled := image.NewRGBA(image.Rect(0, 0, 1024, 1024))
	draw.ApproxBiLinear.Scale(scaled, scaled.Bounds(), photo, photo.Bounds(), draw.Src, nil)
	data := encode(b, FormatJPEG, scaled)
	b.SetBytes(int64(len(data)))
	var decode, hash, decodeCPU, hashCPU time.Duration
	for b.Loop() {
		c0, t0 := processCPU(), time.Now()
		img, _, err := Decode(data, Limits{})
		if err != nil {
			b.Fatal(err)
		}
		c1, t1 := processCPU(), time.Now()
		PDQ(img)
		c2, t2 := processCPU(), time.Now()
		decode += t1.Sub(t0)
		hash += t2.Sub(t1)
		decodeCPU += c1 - c0
		hashCPU += c2 - c1
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
	b.ReportMetric(ms(decode), "decode-ms")
	b.ReportMetric(ms(hash), "hash-ms")
	b.ReportMetric(n/(decode+hash).Seconds(), "images/s")
	if decodeCPU > 0 {
		// CPU time includes GC; it is what one core spends per image
		// whatever else the machine is running.
		b.ReportMetric(ms(decodeCPU), "decode-cpu-ms")
		b.ReportMetric(ms(hashCPU), "hash-cpu-ms")
		b.ReportMetric(n/(decodeCPU+hashCPU).Seconds(), "images/cpu-s")
	}
}
