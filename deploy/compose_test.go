package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

const composeSchema = "test/compose-spec/compose-spec.json"

// composeFile is the part of compose.yaml the structural checks read.
type composeFile struct {
	Services map[string]struct {
		Image       string   `json:"image"`
		Command     []string `json:"command"`
		ReadOnly    bool     `json:"read_only"`
		CapDrop     []string `json:"cap_drop"`
		Secrets     []string `json:"secrets"`
		Ports       []string `json:"ports"`
		Healthcheck *struct {
			Test    []string `json:"test"`
			Disable bool     `json:"disable"`
		} `json:"healthcheck"`
		DependsOn map[string]struct {
			Condition string `json:"condition"`
		} `json:"depends_on"`
	} `json:"services"`
	Secrets map[string]struct {
		File string `json:"file"`
	} `json:"secrets"`
}

// loadCompose reads a compose file as JSON. sigs.k8s.io/yaml resolves the
// anchors and the << merge keys, as compose does.
func loadCompose(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func compileComposeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(composeSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("compose_spec.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("compose_spec.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestComposeMatchesTheSpecification validates compose.yaml against the
// Compose Specification's JSON schema, and proves the schema catches a
// misspelt key (it would otherwise pass anything).
func TestComposeMatchesTheSpecification(t *testing.T) {
	schema := compileComposeSchema(t)
	good := loadCompose(t, "compose.yaml")
	tests := []struct {
		name    string
		doc     []byte
		wantErr string
	}{
		{name: "compose.yaml", doc: good},
		{name: "a misspelt service key", doc: bytes.Replace(good, []byte(`"depends_on"`), []byte(`"depend_on"`), 1), wantErr: "depend_on"},
		{name: "a bad condition", doc: bytes.Replace(good, []byte(`"service_healthy"`), []byte(`"healthy"`), 1), wantErr: "healthy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			err = schema.Validate(inst)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("compose.yaml does not match the Compose Specification:\n%v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("want an error naming %q, got %v", tt.wantErr, err)
			}
		})
	}
}

// TestComposeStartOrder checks what makes `up` work in one go: each
// process starts once what it needs is healthy (or, for migrate, done),
// secrets come from files that exist, and the contenteval processes run
// read-only without capabilities.
func TestComposeStartOrder(t *testing.T) {
	var c composeFile
	if err := json.Unmarshal(loadCompose(t, "compose.yaml"), &c); err != nil {
		t.Fatal(err)
	}
	wantDeps := map[string]map[string]string{
		"migrate": {"postgres": "service_healthy"},
		"api":     {"migrate": "service_completed_successfully", "s3": "service_healthy"},
		"worker":  {"api": "service_healthy"},
	}
	for name, deps := range wantDeps {
		svc, ok := c.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		for dep, cond := range deps {
			if got := svc.DependsOn[dep].Condition; got != cond {
				t.Errorf("%s depends on %s with condition %q, want %q", name, dep, got, cond)
			}
		}
		if !svc.ReadOnly || !slices.Contains(svc.CapDrop, "ALL") {
			t.Errorf("%s: want read_only and cap_drop ALL", name)
		}
	}
	for name, want := range map[string][]string{
		"migrate": {"migrate"}, "api": {"serve", "--role=api", "--no-migrate"}, "worker": {"serve", "--role=worker", "--no-migrate"},
	} {
		if got := c.Services[name].Command; !slices.Equal(got, want) {
			t.Errorf("%s runs %v, want %v", name, got, want)
		}
	}
	for _, name := range []string{"postgres", "s3", "api", "worker"} {
		hc := c.Services[name].Healthcheck
		if hc == nil || hc.Disable || len(hc.Test) == 0 || slices.Contains(hc.Test, "curl") {
			t.Errorf("%s: want a health check that needs no curl, got %+v", name, hc)
		}
	}
	// The worker is checked through its health listener, so a stuck claim
	// loop makes it unhealthy, not only an unreachable database.
	if hc, want := c.Services["worker"].Healthcheck, []string{"CMD", "contenteval", "healthcheck", "--role=worker"}; hc == nil || !slices.Equal(hc.Test, want) {
		t.Errorf("worker health check is %+v, want %v", hc, want)
	}
	for name, s := range c.Secrets {
		if _, err := os.Stat(filepath.Join(".", s.File)); err != nil {
			t.Errorf("secret %s: %v", name, err)
		}
	}
	for name, svc := range c.Services {
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s on every interface; the committed secrets are public", name, p)
			}
		}
	}
}
