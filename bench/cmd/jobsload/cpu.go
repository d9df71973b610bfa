package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// cpuSample is the CPU time used so far by the server process, by every
// PostgreSQL process and by this loader, read from /proc (Linux); zero
// elsewhere. It shows where a request's CPU goes when all three share the
// machine.
type cpuSample struct {
	server, postgres, loader time.Duration
	machine                  machineTicks
}

type cpuPerRequest struct {
	server, postgres, loader time.Duration
	// busy and steal are the machine's shares of CPU time in the phase:
	// used by anything, and taken by the hypervisor for other guests.
	busy, steal float64
}

// machineTicks are the first line of /proc/stat: all ticks, idle ticks
// (idle + iowait) and stolen ticks.
type machineTicks struct{ total, idle, steal int64 }

func readMachine() machineTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineTicks{}
	}
	var m machineTicks
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest time is already counted in user
			break
		}
		m.total += n
		switch i {
		case 3, 4:
			m.idle += n
		case 7:
			m.steal += n
		}
	}
	return m
}

// clockTick is USER_HZ, 100 on every Linux platform Go supports.
const clockTick = 10 * time.Millisecond

func readCPU(serverPid int) cpuSample {
	var s cpuSample
	s.server = procCPU(strconv.Itoa(serverPid))
	s.loader = procCPU("self")
	s.machine = readMachine()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			s.postgres += procCPU(filepath.Base(d))
		}
	}
	return s
}

// procCPU is utime+stime of /proc/<pid>/stat.
func procCPU(pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields count from its ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * clockTick
}

// since divides the CPU used after before by n requests. A PostgreSQL
// backend that exited in between is not counted (the pool keeps them).
func (s cpuSample) since(before cpuSample, n uint64) cpuPerRequest {
	if n == 0 {
		return cpuPerRequest{}
	}
	per := func(a, b time.Duration) time.Duration { return max(0, a-b) / time.Duration(n) }
	out := cpuPerRequest{
		server: per(s.server, before.server), postgres: per(s.postgres, before.postgres), loader: per(s.loader, before.loader),
	}
	if total := s.machine.total - before.machine.total; total > 0 {
		out.steal = float64(s.machine.steal-before.machine.steal) / float64(total)
		out.busy = 1 - float64(s.machine.idle-before.machine.idle)/float64(total) - out.steal
	}
	return out
}

type bucket struct {
	le string
	n  int64
}

type buckets []bucket

var bucketRE = regexp.MustCompile(`contenteval_http_request_duration_seconds_bucket\{operation="createJob",le="([^"]+)"\} (\d+)`)

// serverBuckets reads the server's own latency histogram of POST /v1/jobs
// (cumulative counts), to tell the server's time from the loader's.
func serverBuckets(base string) buckets {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out buckets
	for _, m := range bucketRE.FindAllSubmatch(body, -1) {
		n, _ := strconv.ParseInt(string(m[2]), 10, 64)
		out = append(out, bucket{le: string(m[1]), n: n})
	}
	return out
}

func (b buckets) minus(before buckets) buckets {
	out := make(buckets, len(b))
	for i := range b {
		out[i] = b[i]
		if i < len(before) {
			out[i].n -= before[i].n
		}
	}
	return out
}
