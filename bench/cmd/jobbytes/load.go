package main

// The jobs: one 1 KiB text item each, different for every job, worded like
// prose (a seeded draw from a small vocabulary, so that it compresses as
// text does, not as one repeated sentence would), with one of the policy's
// exact phrases in a fifth of them so that some results have label hits.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var vocabulary = strings.Fields(`the a of and to in is was that for on with as by at from this it be are
	were have has had not but or an which they you we he she his her their our your will would can could
	about after before into over under again then once here there when where why how all each few more
	most other some such only own same so than too very just now people time year day week way thing man
	woman child world life hand part place case point group number night water money story fact month lot
	right study book eye job word business issue side kind head house service friend father mother power
	hour game line end member law car city community name team minute idea kid body information back parent
	face others level office door health person art war history party result change morning reason research
	girl guy moment air teacher force education said made went took came saw knew got gave found thought
	told became left felt brought began kept held wrote stood heard let meant set met ran paid sat spoke
	good new first last long great little own other old right big high different small large next early
	young important few public bad same able`)

// jobText is the text of job i: 1,024 bytes.
func jobText(i int) string {
	r := rand.New(rand.NewPCG(uint64(i), 27))
	var b strings.Builder
	if i%5 == 0 {
		fmt.Fprintf(&b, "forbidden phrase %d ", i%20)
	}
	for b.Len() < 1024 {
		b.WriteString(vocabulary[r.IntN(len(vocabulary))])
		if r.IntN(12) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()[:1024]
}

// post sends one job and returns the answer's job id and status.
func (s *server) post(i int, wait bool) (id, status string, err error) {
	body, _ := json.Marshal(map[string]any{
		"policyId": s.policy, "waitForCompletion": wait,
		"contentData": []map[string]string{{"text": jobText(i)}},
	})
	req, err := http.NewRequest(http.MethodPost, s.base+"/v1/jobs", bytes.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("POST /v1/jobs: %d %s %v", resp.StatusCode, answer, err)
	}
	var a struct {
		Job struct {
			JobID  string `json:"jobId"`
			Status string `json:"status"`
		} `json:"job"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return "", "", err
	}
	return a.Job.JobID, a.Job.Status, nil
}

// submit posts jobs first..first+n-1 from c clients; every synchronous one
// must come back completed.
func (s *server) submit(first, n, c int, wait bool) ([]string, error) {
	ids := make([]string, n)
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range max(1, c) {
		wg.Go(func() {
			for {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				id, status, err := s.post(first+k, wait)
				if err == nil && wait && status != "JOB_STATUS_COMPLETED" {
					err = fmt.Errorf("job %s: %s", id, status)
				}
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				ids[k] = id
			}
		})
	}
	wg.Wait()
	return ids, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// waitFinished polls until no job of the account is pending or running.
func (s *server) waitFinished(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		busy := false
		for _, st := range []string{"JOB_STATUS_PENDING", "JOB_STATUS_RUNNING"} {
			n, err := s.count(st)
			if err != nil {
				return err
			}
			busy = busy || n > 0
		}
		if !busy {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jobs still unfinished after %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// count is 1 when a job of the account has status st, else 0.
func (s *server) count(st string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, s.base+"/v1/jobs?pageSize=1&query.status="+st, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /v1/jobs: %d %s %v", resp.StatusCode, body, err)
	}
	var page struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return 0, err
	}
	return len(page.Jobs), nil
}
