package main

// The load phases: the closed loop for the peak and the open loop at a fixed
// rate, with the request helpers they share.

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contenteval/contenteval/bench"
)

// bodies recycles response buffers: the loader shares the machine with the
// server and the database, so its own garbage is kept small.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func do(c *http.Client, u string, hdr http.Header, body []byte) (int, []byte, error) {
	buf := bodies.Get().(*bytes.Buffer)
	defer bodies.Put(buf)
	status, err := doInto(c, u, hdr, body, buf)
	return status, bytes.Clone(buf.Bytes()), err
}

// doInto posts body and reads the response into buf. hdr is shared by
// concurrent requests; the transport only reads it.
func doInto(c *http.Client, u string, hdr http.Header, body []byte, buf *bytes.Buffer) (int, error) {
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = hdr
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, err
}

type phase struct {
	h        bench.Histogram
	seconds  []*bench.Histogram // open loop: by scheduled time, one per timeline step
	late     bench.Histogram    // open loop: how late each request was sent
	rps      float64
	errors   uint64
	firstErr string
}

func (p *phase) record(ok bool, lat time.Duration, errText string) {
	if ok {
		p.h.Record(lat)
		return
	}
	p.errors++
	if p.firstErr == "" {
		p.firstErr = errText
	}
}

func (p *phase) merge(o *phase) {
	p.h.Merge(&o.h)
	p.errors += o.errors
	if p.firstErr == "" {
		p.firstErr = o.firstErr
	}
}

func call(c *rawClient) (bool, string) {
	buf := bodies.Get().(*bytes.Buffer)
	defer bodies.Put(buf)
	status, err := c.post(buf)
	b := buf.Bytes()
	switch {
	case err != nil:
		return false, err.Error()
	case status != http.StatusOK:
		return false, fmt.Sprintf("status %d: %.200s", status, b)
	case !bytes.Contains(b, []byte("JOB_STATUS_COMPLETED")):
		return false, fmt.Sprintf("not completed: %.200s", b)
	}
	return true, ""
}

// closed runs n workers back to back for d.
func closed(c *rawClient, n int, d time.Duration) *phase {
	var stop atomic.Bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := &phase{}
	begin := time.Now()
	time.AfterFunc(d, func() { stop.Store(true) })
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := &phase{}
			for !stop.Load() {
				t0 := time.Now()
				ok, e := call(c)
				local.record(ok, time.Since(t0), e)
			}
			mu.Lock()
			total.merge(local)
			mu.Unlock()
		}()
	}
	wg.Wait()
	total.rps = float64(total.h.Count()) / time.Since(begin).Seconds()
	return total
}

// open starts requests at a fixed rate for d, each measured from its
// scheduled start; the timeline has one histogram per step.
func open(c *rawClient, rate float64, d, step time.Duration) *phase {
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := &phase{}
	interval := time.Duration(float64(time.Second) / rate)
	begin := time.Now()
	n := int(d / interval)
	for range int(d/step) + 1 {
		total.seconds = append(total.seconds, &bench.Histogram{})
	}
	for i := range n {
		due := begin.Add(time.Duration(i) * interval)
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			late := time.Since(due)
			ok, e := call(c)
			lat := time.Since(due)
			mu.Lock()
			total.late.Record(late)
			total.record(ok, lat, e)
			if ok {
				total.seconds[int(due.Sub(begin)/step)].Record(lat)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	total.rps = float64(total.h.Count()) / time.Since(begin).Seconds()
	return total
}
