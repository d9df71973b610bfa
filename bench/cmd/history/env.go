package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/contenteval/contenteval/bench"
	"github.com/contenteval/contenteval/persistence"
)

// env is one database with a server (role api: no worker touches the
// history while it is measured) and a policy-first account, its key and
// the load tests' 20-label policy.
type env struct {
	backend, dbURL, dataDir, appName string
	server                           *exec.Cmd
	base, token                      string
	accountID, policyID, versionID   string
	db                               *persistence.DB
	client                           *http.Client
	drop                             func()
}

func newEnv(ctx context.Context, o options, dir, backend, prefix string) (*env, error) {
	e := &env{backend: backend, dataDir: filepath.Join(dir, "data"), appName: prefix + "_server", drop: func() {}}
	e.dbURL = "sqlite:" + filepath.Join(e.dataDir, "contenteval.db")
	if backend == "postgres" {
		u, drop, err := bench.PrivateSchema(ctx, o.pg, prefix)
		if err != nil {
			return nil, err
		}
		e.dbURL, e.drop = u, drop
	}
	if err := e.start(ctx, o.bin); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) start(ctx context.Context, bin string) error {
	if err := os.MkdirAll(e.dataDir, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command(bin, "migrate", "--data-dir="+e.dataDir, "--database-url="+e.dbURL).CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %w: %s", err, out)
	}
	acct, err := bench.CLI(bin, e.dataDir, e.dbURL, "accounts", "create", "--name", "history", "--type", "policy-first")
	if err != nil {
		return err
	}
	e.accountID = acct["accountId"].(string)
	key, err := bench.CLI(bin, e.dataDir, e.dbURL, "keys", "create", "--account", e.accountID)
	if err != nil {
		return err
	}
	e.token = key["token"].(string)
	serverURL := e.dbURL
	if e.backend == "postgres" {
		serverURL = withQuery(e.dbURL, "application_name", e.appName)
	}
	if e.server, e.base, err = bench.ServeBinary(bin, e.dataDir, serverURL, "--role=api"); err != nil {
		return err
	}
	e.client = &http.Client{Timeout: 5 * time.Minute}
	if e.policyID, err = bench.CreatePolicy(e.client, e.base, e.token); err != nil {
		return err
	}
	var p struct {
		Policy struct {
			PolicyKey       string `json:"policyKey"`
			ActiveVersionID string `json:"activeVersionId"`
		} `json:"policy"`
	}
	if err := e.getJSON("/v1/policies/"+e.policyID, &p); err != nil {
		return err
	}
	e.versionID = p.Policy.ActiveVersionID
	e.db, err = persistence.Open(ctx, e.dbURL)
	return err
}

// history is the shape of this account's generated jobs.
func (e *env) history(jobs, days int) history {
	return history{accountID: e.accountID, policyID: e.policyID, policyKey: "bench", versionID: e.versionID, jobs: jobs, days: days}
}

// analyze refreshes PostgreSQL's statistics, as autovacuum would after a
// bulk load. SQLite is left as a server leaves it.
func (e *env) analyze(ctx context.Context) error {
	if e.backend != "postgres" {
		return nil
	}
	_, err := e.db.ExecContext(ctx, "ANALYZE")
	return err
}

func (e *env) getJSON(path string, v any) error {
	req, err := http.NewRequest(http.MethodGet, e.base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s %v", path, resp.StatusCode, body, err)
	}
	return json.Unmarshal(body, v)
}

// backendPIDs are the PostgreSQL processes serving the server: its
// connections and their parallel workers of the moment.
func (e *env) backendPIDs(ctx context.Context) []int { return e.backendPIDsOf(ctx, e.appName) }

// backendPIDsOf are the PostgreSQL processes of connections named app.
// A parallel worker that starts and ends between two samples is missed.
func (e *env) backendPIDsOf(ctx context.Context, app string) []int {
	if e.backend != "postgres" {
		return nil
	}
	var pids []int
	_ = e.db.SelectContext(ctx, &pids, `SELECT pid FROM pg_stat_activity WHERE application_name = $1
		UNION SELECT pid FROM pg_stat_activity WHERE leader_pid IN (SELECT pid FROM pg_stat_activity WHERE application_name = $1)`, app)
	return pids
}

func (e *env) close() {
	bench.StopBinary(e.server)
	if e.db != nil {
		e.db.Close()
	}
	e.drop()
}

func withQuery(raw, key, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// recount counts the generated history into the metric counts per day
// and per hour with migrations 00111's and 00140's own backfill
// statements, read from the working tree.
func recount(ctx context.Context, db *persistence.DB) error {
	for _, m := range []struct{ file, table string }{
		{"00111_version_metric_counts.sql", "version_metric_counts"},
		{"00140_version_metric_hours.sql", "version_metric_hour_counts"},
	} {
		text, err := os.ReadFile(filepath.Join("persistence", "migrations", string(db.Dialect), m.file))
		if err != nil {
			return err
		}
		up := string(text)
		i, j := strings.Index(up, "INSERT INTO "+m.table), strings.Index(up, "-- +goose Down")
		if i < 0 || j < i {
			return fmt.Errorf("no backfill in migration %s", m.file)
		}
		if _, err := db.ExecContext(ctx, `DELETE FROM `+m.table); err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, up[i:j]); err != nil {
			return err
		}
	}
	return nil
}
