// Package blobstoretest runs a real S3-compatible server for tests:
// github.com/versity/versitygw, built once per machine with the Go toolchain
// and started on a random loopback port with a posix backend in a
// temporary directory. No fake: the SigV4 signing, presigned URLs and
// error codes are the gateway's.
package blobstoretest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Credentials of the gateway StartVersityGW runs.
const (
	AccessKey  = "contenteval-test"
	SecretKey  = "contenteval-test-secret"
	vgwVersion = "v1.8.0"
)

var (
	vgwOnce sync.Once
	vgwBin  string
	vgwErr  error
)

// versityGWBinary builds github.com/versity/versitygw (a real S3 gateway)
// with the Go toolchain into the user cache, once per machine and version.
func versityGWBinary(t testing.TB) string {
	t.Helper()
	vgwOnce.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "contenteval-test", "versitygw-"+vgwVersion)
		bin := filepath.Join(dir, "versitygw")
		if _, err := os.Stat(bin); err == nil {
			vgwBin = bin
			return
		}
		tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
		if err != nil && os.MkdirAll(filepath.Dir(dir), 0o755) == nil {
			tmp, err = os.MkdirTemp(filepath.Dir(dir), "build-")
		}
		if err != nil {
			vgwErr = err
			return
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command("go", "install", "github.com/versity/versitygw/cmd/versitygw@"+vgwVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false")
		cmd.Dir = tmp // outside this module: the gateway builds with its own go.mod
		if out, err := cmd.CombinedOutput(); err != nil {
			vgwErr = fmt.Errorf("go install versitygw@%s: %v\n%s", vgwVersion, err, out)
			return
		}
		if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
			if _, statErr := os.Stat(bin); statErr != nil { // another process won the race otherwise
				vgwErr = err
				return
			}
		}
		vgwBin = bin
	})
	require.NoError(t, vgwErr, "building the S3 gateway the test runs against")
	return vgwBin
}

// StartVersityGW runs the gateway on a random loopback port with a posix
// backend in a temporary directory, and returns its endpoint.
func StartVersityGW(t testing.TB) string {
	t.Helper()
	bin := versityGWBinary(t)
	root := t.TempDir()
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(bin, "--access", AccessKey, "--secret", SecretKey, "--port", addr, "posix", root)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if waitListening(addr, exited, 30*time.Second) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			return "http://" + addr
		}
		_ = cmd.Process.Kill()
		<-exited
		if attempt == 2 {
			t.Fatalf("versitygw did not start: %s", logs.String())
		}
	}
}

func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
