package bench

// What the load tools that start a contenteval binary share: its CLI,
// waiting for it to serve, and the benchmark policy.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// CLI runs a contenteval command of bin with --json on the server's data
// directory and database, and decodes its answer.
func CLI(bin, dataDir, dbURL string, args ...string) (map[string]any, error) {
	cmd := exec.Command(bin, append(args, "--json", "--data-dir="+dataDir, "--database-url="+dbURL)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %w", args, err)
	}
	var m map[string]any
	return m, json.Unmarshal(out, &m)
}

// WaitReady waits up to 30 s for the server at base to answer /readyz.
func WaitReady(base string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("server did not become ready")
}

// PolicyText is the load tests' 20-label policy: per label an exact phrase,
// a fuzzy (obfuscation-tolerant) phrase and a lexical concept. REGEX
// signals are left out on purpose: the rules engine runs each regular
// expression over the text separately (about 100 µs per KiB each), so 20 of
// them would make this a benchmark of Go's regexp package.
func PolicyText() string {
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "LABEL \"label-%02d\": \"review\" {\n    =(\"forbidden phrase %d\")\n    ~(\"spamword%d\")\n    \"violent threat %d\"\n}\n", i, i, i, i)
	}
	return b.String()
}

// CreatePolicy creates the PolicyText policy for token on the server at
// base and returns its id.
func CreatePolicy(client *http.Client, base, token string) (string, error) {
	body, _ := json.Marshal(map[string]string{"policyKey": "bench", "text": PolicyText()})
	req, err := http.NewRequest(http.MethodPost, base+"/v1/policies", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("create policy: %d %s %v", resp.StatusCode, answer, err)
	}
	var created struct {
		Policy struct {
			PolicyID string `json:"policyId"`
		} `json:"policy"`
	}
	return created.Policy.PolicyID, json.Unmarshal(answer, &created)
}

// Server is a `contenteval serve` process on SQLite in a temporary
// directory, with one policy-first account and its key.
type Server struct {
	Bin, Dir, Base string
	Token          string
	Cmd            *exec.Cmd
}

// StartServer builds ./cmd/contenteval (unless bin is given), migrates a
// fresh SQLite database, creates a policy-first account and key, and starts
// the server with args added to its flags. Stop ends it and removes the
// directory.
func StartServer(bin string, args ...string) (*Server, error) {
	dir, err := os.MkdirTemp("", "contenteval-bench")
	if err != nil {
		return nil, err
	}
	s := &Server{Bin: bin, Dir: dir}
	if s.Bin == "" {
		s.Bin = filepath.Join(dir, "contenteval")
		build := exec.Command("go", "build", "-o", s.Bin, "./cmd/contenteval")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			s.Stop()
			return nil, fmt.Errorf("go build: %w", err)
		}
	}
	dataDir := filepath.Join(dir, "data")
	dbURL := "sqlite:" + filepath.Join(dataDir, "contenteval.db")
	if out, err := exec.Command(s.Bin, "migrate", "--data-dir="+dataDir, "--database-url="+dbURL).CombinedOutput(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("migrate: %w: %s", err, out)
	}
	acct, err := CLI(s.Bin, dataDir, dbURL, "accounts", "create", "--name", "bench", "--type", "policy-first")
	if err == nil {
		var key map[string]any
		key, err = CLI(s.Bin, dataDir, dbURL, "keys", "create", "--account", acct["accountId"].(string))
		if err == nil {
			s.Token = key["token"].(string)
		}
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	if s.Cmd, s.Base, err = ServeBinary(s.Bin, dataDir, dbURL, args...); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop ends the server and removes its directory.
func (s *Server) Stop() {
	StopBinary(s.Cmd)
	os.RemoveAll(s.Dir)
}

// ServeBinary starts `bin serve` on a free loopback port over dataDir and the
// (migrated) database dbURL, with the load tools' flags (no rate limit,
// errors only) and args, and returns once it is ready, with its base URL.
func ServeBinary(bin, dataDir, dbURL string, args ...string) (*exec.Cmd, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, append([]string{"serve", "--addr=" + addr, "--data-dir=" + dataDir, "--database-url=" + dbURL,
		"--rate-rps=0", "--log-level=error", "--no-migrate=true"}, args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	base := "http://" + addr
	if err := WaitReady(base); err != nil {
		StopBinary(cmd)
		return nil, "", err
	}
	return cmd, base, nil
}

// StopBinary interrupts a server ServeBinary started and waits for it to exit.
func StopBinary(cmd *exec.Cmd) {
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}
