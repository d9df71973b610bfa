package modelbackend

import (
	"os"
	"strings"
	"testing"
)

// The README's backends files are the ones users copy: each must load.
func TestReadmeBackendsFilesLoad(t *testing.T) {
	t.Setenv("GUARD_API_KEY", "x")
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "## Model backends")
	if !ok {
		t.Fatal("README has no Model backends section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := strings.Split(section, "```yaml\n")[1:]
	if len(blocks) < 5 {
		t.Fatalf("%d backends files in the README, want the reference and one per server", len(blocks))
	}
	seen := map[string]bool{}
	for i, b := range blocks {
		body, _, _ := strings.Cut(b, "```")
		f, err := ParseFile([]byte(body))
		if err != nil {
			t.Errorf("README backends file %d: %v\n%s", i+1, err, body)
			continue
		}
		for _, s := range f.Backends {
			seen[s.Profile] = true
		}
	}
	for _, p := range ProfileNames() {
		if !seen[p] {
			t.Errorf("no README backends file uses profile %s", p)
		}
	}
}
