package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/contenteval/contenteval/persistence"
	"github.com/spf13/cobra"
)

// The healthcheck command is what a container runtime's HEALTHCHECK or a
// Kubernetes exec probe runs: the runtime image has no curl, so the binary
// checks itself (docs/operations.md).

// healthBodyLimit bounds what is read of a /readyz answer: its reason is
// one line.
const healthBodyLimit = 4 << 10

// healthcheckCommand exits 0 when the local server is ready, 1 when it is
// not, 2 on a usage error. An API (or all-in-one) process is asked GET
// /readyz on its listen address; a worker GET /readyz and GET /healthz on
// its health address, so a stuck claim loop fails the check too. A worker
// run with no health listener (--health-addr=) is checked as its /readyz
// would be: the database answers.
func (c *command) healthcheckCommand() *cobra.Command {
	fs := newFlagSet("healthcheck")
	resolve := bindConfig(fs, false, c.getenv)
	addr := fs.String("addr", envOr(c.getenv, "CONTENTEVAL_ADDR", ":8080"), "the server's listen address ($CONTENTEVAL_ADDR)")
	healthAddr := fs.String("health-addr", envOr(c.getenv, "CONTENTEVAL_HEALTH_ADDR", ":8081"), "a worker's health listen address; empty: ask the database ($CONTENTEVAL_HEALTH_ADDR)")
	role := fs.String("role", envOr(c.getenv, "CONTENTEVAL_ROLE", "all"), "the server's role: all, api or worker ($CONTENTEVAL_ROLE)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long the check may take")
	cmd := &cobra.Command{Use: "healthcheck [--addr A] [--role R] [--health-addr A] [--timeout T]", Short: "exit 0 when the local server is ready (container probes)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q", args[0])
			}
			return nil
		}}
	cmd.RunE = c.action(func(*cobra.Command, []string) int {
		return checkHealth(c.ctx, c.stdout, c.stderr, probeTarget{addr: *addr, healthAddr: *healthAddr, role: *role}, *timeout, resolve)
	})
	return withGoFlags(cmd, fs)
}

// probeTarget is the process a healthcheck asks: its role and addresses.
type probeTarget struct{ addr, healthAddr, role string }

func checkHealth(ctx context.Context, stdout, stderr io.Writer, target probeTarget, timeout time.Duration, resolve func() (Config, error)) int {
	if timeout <= 0 {
		fmt.Fprintln(stderr, "contenteval healthcheck: --timeout must be positive")
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	switch target.role {
	case "all", "api":
		var base string
		if base, err = localURL(target.addr); err != nil {
			fmt.Fprintln(stderr, "contenteval healthcheck: --addr:", err)
			return 2
		}
		err = checkGet(ctx, base, "/readyz")
	case "worker":
		if target.healthAddr != "" {
			base, uerr := localURL(target.healthAddr)
			if uerr != nil {
				fmt.Fprintln(stderr, "contenteval healthcheck: --health-addr:", uerr)
				return 2
			}
			if err = checkGet(ctx, base, "/readyz"); err == nil {
				err = checkGet(ctx, base, "/healthz")
			}
			break
		}
		cfg, cerr := resolve()
		if cerr != nil {
			fmt.Fprintln(stderr, "contenteval healthcheck:", cerr)
			return 2
		}
		err = checkDatabase(ctx, cfg.DatabaseURL)
	default:
		fmt.Fprintf(stderr, "contenteval healthcheck: --role: %q is not all, api or worker\n", target.role)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "contenteval healthcheck: not ready:", err)
		return 1
	}
	fmt.Fprintln(stdout, "ready")
	return 0
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

// localURL is the base URL of a server listening on addr. A wildcard
// host (":8080", "0.0.0.0:8080", "[::]:8080") listens on loopback too,
// which is what a check inside the container reaches.
func localURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q is not HOST:PORT", addr)
	}
	if port == "" || strings.ContainsAny(port, "/?#@") {
		return "", fmt.Errorf("%q has no usable port", addr)
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	if strings.ContainsAny(host, "/?#@ ") {
		return "", fmt.Errorf("%q is not HOST:PORT", addr)
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// checkGet wants 200 from GET base+path; anything else is not ready, with
// the server's one-line reason when it gave one.
func checkGet(ctx context.Context, base, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	client := &http.Client{
		// A redirect is not readiness, and following it could leave the
		// host the check is about.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		// The proxy settings of the environment are for outgoing fetches,
		// never for the local server.
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, healthBodyLimit))
	if resp.StatusCode != http.StatusOK {
		reason := strings.TrimSpace(strings.ToValidUTF8(string(body), "?"))
		if len(reason) > 200 {
			reason = reason[:200]
		}
		return fmt.Errorf("GET %s: %s %s", path, resp.Status, reason)
	}
	return nil
}

// checkDatabase connects to the database a worker uses and asks it what
// /readyz would.
func checkDatabase(ctx context.Context, url string) error {
	db, err := persistence.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		return errors.New("database: " + err.Error())
	}
	return nil
}
