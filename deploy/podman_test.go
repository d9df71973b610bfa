package deploy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// deployImage is the image make test-deploy built from Containerfile.
func deployImage(t *testing.T) string {
	t.Helper()
	img := os.Getenv("CONTENTEVAL_DEPLOY_IMAGE")
	if img != "" {
		return img
	}
	skipUnlessCI(t, "CONTENTEVAL_DEPLOY_IMAGE is not set: run the image tests with make test-deploy")
	return ""
}

// podman runs podman and returns its trimmed stdout, failing t on an error.
func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := podmanErr(args...)
	if err != nil {
		t.Fatalf("podman %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func podmanErr(args ...string) (string, error) {
	cmd := exec.Command("podman", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &commandError{err: err, stderr: stderr.String()}
	}
	return strings.TrimSpace(stdout.String()), nil
}

type commandError struct {
	err    error
	stderr string
}

func (e *commandError) Error() string { return e.err.Error() + ": " + e.stderr }

func randomName(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// freePort is a loopback port free at the time of the call; the container
// shares the host's network, so the server binds it there.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// runningServer is one container of the image, serving.
type runningServer struct {
	name, url string
}

// startContainer runs the image as the docs say to run it: read-only root,
// no tmpfs anywhere (--read-only-tmpfs=false, so nothing may rely on /tmp),
// a named volume at /data, every capability dropped.
func startContainer(t *testing.T, image string) runningServer {
	t.Helper()
	name := randomName("ce-test-")
	volume := randomName("ce-test-data-")
	port := freePort(t)
	podman(t, "volume", "create", volume)
	t.Cleanup(func() { _, _ = podmanErr("volume", "rm", "--force", volume) })
	podman(t, "run", "--detach", "--name", name,
		"--read-only", "--read-only-tmpfs=false", "--cap-drop=ALL", "--security-opt=no-new-privileges",
		"--network=host", "--volume", volume+":/data",
		"--env", "CONTENTEVAL_ADDR=127.0.0.1:"+port, "--env", "CONTENTEVAL_LOG_LEVEL=warn",
		image, "serve")
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := podmanErr("logs", name)
			t.Logf("container logs:\n%s", logs)
		}
		_, _ = podmanErr("rm", "--force", "--time", "10", name)
	})
	srv := runningServer{name: name, url: "http://127.0.0.1:" + port}
	waitReady(t, srv)
	return srv
}

// waitReady polls /readyz until it answers 200, the container exits, or
// two minutes pass (a cold start of the image on a loaded 2-core machine).
func waitReady(t *testing.T, srv runningServer) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		resp, err := client.Get(srv.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if state, _ := podmanErr("inspect", "--format", "{{.State.Status}}", srv.name); state != "running" {
			t.Fatalf("the container is %q, not running", state)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /readyz: not 200 within 2 minutes (last error %v)", err)
		}
	}
}
