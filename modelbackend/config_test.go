package modelbackend

import (
	"strings"
	"testing"
	"time"
)

func TestParseFile(t *testing.T) {
	t.Setenv("CE_TEST_KEY", "secret")
	f, err := ParseFile([]byte(`default: local
backends:
  - name: local
    url: http://127.0.0.1:8000/v1/
    model: llama-guard-3-8b
    profile: llama-guard
    apiKeyEnv: CE_TEST_KEY
    expeditedBackend: fast
  - name: fast
    url: https://guard.example/v1
    model: shieldgemma-2b
    profile: shieldgemma
    timeout: 2s
    cacheTTL: 0s
    onFailure: builtin
`))
	if err != nil {
		t.Fatal(err)
	}
	l := f.Backends[0]
	if l.URL != "http://127.0.0.1:8000/v1" || l.Timeout.Duration != 30*time.Second || l.MaxConcurrency != 16 || l.BundleSize != 8 ||
		l.OnFailure != "fail" || l.CacheTTL.Duration != 10*time.Minute || *l.Retries != 2 || l.MaxPromptBytes != 32<<10 {
		t.Errorf("defaults: %+v", l)
	}
	if fast := f.Backends[1]; fast.CacheTTL.Duration != 0 || fast.Timeout.Duration != 2*time.Second || fast.OnFailure != "builtin" {
		t.Errorf("fast: %+v", fast)
	}
}

func TestParseFileErrorsNameTheirLine(t *testing.T) {
	ok := "  - name: a\n    url: http://x/v1\n    model: m\n    profile: generic\n"
	cases := []struct{ name, file, want string }{
		{"unknown field", "backends:\n" + ok + "    colour: blue\n", "line 6: field colour not found"},
		{"bad duration", "backends:\n" + ok + "    timeout: soon\n", `line 6: "soon" is not a duration`},
		{"unknown profile", "backends:\n  - name: a\n    url: http://x/v1\n    model: m\n    profile: gpt5\n", `line 2: backend "a": profile "gpt5" is not one of generic, gpt-oss-safeguard, granite-guardian, llama-guard, shieldgemma`},
		{"vision on a text-only profile", "backends:\n  - name: a\n    url: http://x/v1\n    model: m\n    profile: llama-guard\n    vision: true\n", "line 2: backend \"a\": profile llama-guard reads text only"},
		{"duplicate name", "backends:\n" + ok + ok, `line 6: backend name "a" is used twice`},
		{"reserved name", "backends:\n  - name: builtin\n    url: http://x/v1\n    model: m\n    profile: generic\n", `line 2: backend name "builtin" is reserved`},
		{"not a URL", "backends:\n  - name: a\n    url: ftp://x\n    model: m\n    profile: generic\n", `line 2: backend "a": url "ftp://x" must be an http(s) URL`},
		{"missing model", "backends:\n  - name: a\n    url: http://x\n    profile: generic\n", `line 2: backend "a": model is required`},
		{"unset key variable", "backends:\n" + ok + "    apiKeyEnv: CE_TEST_SURELY_UNSET\n", "line 2: backend \"a\": apiKeyEnv names CE_TEST_SURELY_UNSET, which is not set"},
		{"bad onFailure", "backends:\n" + ok + "    onFailure: ignore\n", `onFailure must be fail or builtin, not "ignore"`},
		{"a prompt cap below a useful prompt", "backends:\n" + ok + "    maxPromptBytes: 100\n", `line 2: backend "a": maxPromptBytes must be 1024 to 1048576`},
		{"too much concurrency", "backends:\n" + ok + "    maxConcurrency: 100000\n", "maxConcurrency must be 1 to 1024"},
		{"unknown expedited backend", "backends:\n" + ok + "    expeditedBackend: zz\n", `line 2: backend "a": expeditedBackend "zz" is not a backend`},
		{"unknown default", "default: zz\nbackends:\n" + ok, `default "zz" is not a backend`},
		{"no backends", "default: a\n", "names no backends"},
		{"not YAML", "backends: [", "yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFile([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte("backends:\n  - name: a\n    url: http://x/v1\n    model: m\n    profile: generic\n"))
	f.Add([]byte("default: a\nbackends: []\n"))
	f.Add([]byte("backends:\n  - &a {name: a}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseFile(data)
		if err != nil {
			return
		}
		for _, b := range file.Backends {
			if _, ok := profiles[b.Profile]; !ok || b.MaxConcurrency < 1 || b.BundleSize < 1 || b.Retries == nil || b.CacheTTL == nil {
				t.Fatalf("accepted an invalid backend: %+v", b)
			}
		}
	})
}
