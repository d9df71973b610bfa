package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestComposeUp brings compose.yaml up with podman-compose, as an operator
// would with `podman-compose up`, and uses it: a synchronous job through
// the api service, and an asynchronous one that only the worker service
// runs (an api process claims no queued jobs). make test-deploy runs it
// with the image it built and stand-ins for the PostgreSQL and S3 images
// (CONTENTEVAL_DEPLOY_COMPOSE=1 and the *_IMAGE variables below).
func TestComposeUp(t *testing.T) {
	img := deployImage(t)
	if os.Getenv("CONTENTEVAL_DEPLOY_COMPOSE") != "1" {
		t.Skip("CONTENTEVAL_DEPLOY_COMPOSE is not 1: make test-deploy sets it where podman-compose runs")
	}
	if _, err := exec.LookPath("podman-compose"); err != nil {
		t.Fatal("podman-compose is not installed")
	}
	project := randomName("cecompose")
	port := freePort(t)
	env := append(os.Environ(),
		"CONTENTEVAL_IMAGE="+img,
		"CONTENTEVAL_POSTGRES_IMAGE="+os.Getenv("CONTENTEVAL_DEPLOY_POSTGRES_IMAGE"),
		"CONTENTEVAL_PORT="+port,
		"CONTENTEVAL_S3_PORT="+freePort(t))
	compose := func(args ...string) (string, error) {
		cmd := exec.Command("podman-compose", append([]string{"-p", project, "-f", "compose.yaml"}, args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, svc := range []string{"migrate", "api", "worker", "postgres", "s3"} {
				logs, _ := podmanErr("logs", "--tail", "40", project+"_"+svc+"_1")
				t.Logf("%s logs:\n%s", svc, logs)
			}
		}
		if out, err := compose("down", "-v", "-t", "10"); err != nil {
			t.Logf("podman-compose down: %v\n%s", err, out)
		}
		// podman-compose 1.0 leaves the project's network behind.
		_, _ = podmanErr("network", "rm", "--force", project+"_default")
	})
	if out, err := compose("up", "-d", "--no-build"); err != nil {
		t.Fatalf("podman-compose up: %v\n%s", err, out)
	}
	api := runningServer{name: project + "_api_1", url: "http://127.0.0.1:" + port}
	waitComposeReady(t, api)

	token := composeKey(t, compose)
	policyID := createPolicy(t, api, token)
	item := []any{map[string]any{"text": "i will kill you"}}

	var sync jobAnswer
	apiCall(t, api, token, "/v1/jobs", map[string]any{"policyId": policyID, "waitForCompletion": true, "contentData": item}, &sync)
	if sync.Job.Status != "JOB_STATUS_COMPLETED" {
		t.Fatalf("synchronous job through the api service: %s %s", sync.Job.Status, sync.Job.Error)
	}

	var async jobAnswer
	apiCall(t, api, token, "/v1/jobs", map[string]any{"policyId": policyID, "contentData": item}, &async)
	// Polling the API, as a client does.
	waitFor(t, 2*time.Minute, 250*time.Millisecond, "asynchronous job "+async.Job.JobUUID, func() (bool, error) {
		if async.Job.Status == "JOB_STATUS_FAILED" {
			t.Fatalf("asynchronous job %s: %s %s", async.Job.JobUUID, async.Job.Status, async.Job.Error)
		}
		if async.Job.Status == "JOB_STATUS_COMPLETED" {
			return true, nil
		}
		apiGet(t, api, token, "/v1/jobs/"+async.Job.JobUUID, &async)
		return false, fmt.Errorf("%s %s", async.Job.Status, async.Job.Error)
	})
}

type jobAnswer struct {
	Job struct {
		JobUUID string          `json:"jobUuid"`
		Status  string          `json:"status"`
		Error   json.RawMessage `json:"error"`
	} `json:"job"`
}

// waitComposeReady polls the api service's /readyz. podman-compose 1.0
// starts the services in order but does not wait for their health, so the
// api may restart while migrate has not finished: only 200 ends the wait.
func waitComposeReady(t *testing.T, srv runningServer) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	waitFor(t, 3*time.Minute, 500*time.Millisecond, "the api service's /readyz to answer 200", func() (bool, error) {
		resp, err := client.Get(srv.url + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("HTTP %d", resp.StatusCode)
	})
}

// composeKey makes a policy-first account and its key as docs/operations.md
// tells an operator to: the CLI run through the services' entrypoint,
// which puts the secrets into its environment. podman-compose prints its
// own commands on stdout too: the answer is the line that is a JSON object.
func composeKey(t *testing.T, compose func(...string) (string, error)) string {
	t.Helper()
	run := func(out any, args ...string) {
		t.Helper()
		text, err := compose(append([]string{"run", "--rm", "--no-deps", "-T", "migrate"}, args...)...)
		if err != nil {
			t.Fatalf("podman-compose run migrate %v: %v\n%s", args, err, text)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), out) == nil {
				return
			}
		}
		t.Fatalf("podman-compose run migrate %v printed no JSON object:\n%s", args, text)
	}
	var account struct {
		AccountID string `json:"accountId"`
	}
	run(&account, "accounts", "create", "--name", "compose-test", "--type", "policy-first", "--json")
	var key struct {
		Token string `json:"token"`
	}
	run(&key, "keys", "create", "--account", account.AccountID, "--json")
	if account.AccountID == "" || key.Token == "" {
		t.Fatalf("account %q, key of %d bytes", account.AccountID, len(key.Token))
	}
	return key.Token
}

// apiGet GETs path and decodes a 200 answer into out.
func apiGet(t *testing.T, srv runningServer, token, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, strings.TrimSpace(string(raw)))
	}
}
