package contenteval

import (
	"errors"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/contenteval/contenteval"

// imports returns, for every non-test Go file under dir, the project
// packages it imports.
func projectImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module || strings.HasPrefix(p, module+"/") {
				out[path] = append(out[path], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDependenciesPointInward enforces DESIGN §1: cmd -> handlers -> domain
// <- persistence. domain (and the packages under it) imports nothing of the
// project outside domain; handlers never imports persistence.
func TestDependenciesPointInward(t *testing.T) {
	for file, imps := range projectImports(t, "domain") {
		for _, p := range imps {
			if p != module+"/domain" && !strings.HasPrefix(p, module+"/domain/") {
				t.Errorf("%s imports %s: domain must not import other project packages", file, p)
			}
		}
	}
	for file, imps := range projectImports(t, "handlers") {
		for _, p := range imps {
			if p == module+"/persistence" || strings.HasPrefix(p, module+"/persistence/") {
				t.Errorf("%s imports %s: handlers must not import persistence", file, p)
			}
			if p == module+"/blobstore" || strings.HasPrefix(p, module+"/blobstore/") {
				t.Errorf("%s imports %s: handlers see blobs through domain.BlobStore", file, p)
			}
		}
	}
	for file, imps := range projectImports(t, "blobstore") {
		for _, p := range imps {
			if p != module+"/domain" && !strings.HasPrefix(p, module+"/blobstore") {
				t.Errorf("%s imports %s: blobstore is an adapter of domain.BlobStore only", file, p)
			}
		}
	}
	for file, imps := range projectImports(t, "persistence") {
		for _, p := range imps {
			if p == module+"/handlers" || strings.HasPrefix(p, module+"/gen") {
				t.Errorf("%s imports %s: persistence must not know the API", file, p)
			}
		}
	}
}

// TestLayers enforces the rest of DESIGN §1, package by package: the
// kernel and the engines under it depend on nothing outward; aggregates on
// the kernel and, without cycles, on the aggregates they are built on; adapters know
// the kernel's ports and each other only where one is built on another
// (media fetches through safehttp); only cmd (and the bench harness, which
// starts servers) wires concrete stores and handlers together.
func TestLayers(t *testing.T) {
	in := func(pkgs ...string) func(string) bool {
		return func(p string) bool {
			for _, q := range pkgs {
				if p == module+"/"+q || strings.HasPrefix(p, module+"/"+q+"/") {
					return true
				}
			}
			return false
		}
	}
	only := func(pkgs ...string) func(string) bool {
		allowed := in(pkgs...)
		return func(p string) bool { return !allowed(p) }
	}
	// onlyKernelAnd allows the kernel, its engines and the named
	// aggregates, and nothing else (not other aggregates).
	onlyKernelAnd := func(aggregates ...string) func(string) bool {
		allowed := map[string]bool{module + "/domain": true, module + "/domain/rules": true, module + "/domain/imaging": true}
		for _, a := range aggregates {
			allowed[module+"/"+a] = true
		}
		return func(p string) bool { return !allowed[p] }
	}
	tests := []struct {
		dir       string
		recursive bool
		forbidden func(importPath string) bool
		why       string
	}{
		{"domain", false, func(p string) bool { return p != module+"/domain/rules" }, "the kernel imports nothing of ours but the rule engine"},
		{"domain/rules", true, func(string) bool { return true }, "the rule engine is a leaf"},
		{"domain/imaging", true, only("domain"), "imaging knows only the kernel's failure types"},
		{"domain/policies", true, onlyKernelAnd(), "an aggregate knows the kernel and the aggregates it is built on"},
		{"domain/webhooks", true, onlyKernelAnd(), "an aggregate knows the kernel and the aggregates it is built on"},
		{"domain/access", true, onlyKernelAnd(), "an aggregate knows the kernel and the aggregates it is built on"},
		{"domain/jobs", true, onlyKernelAnd("domain/policies"), "jobs are evaluated with a policy's active version"},
		{"domain/labels", true, onlyKernelAnd("domain/jobs"), "labels evaluate through the jobs' item runner"},
		{"domain/batches", true, onlyKernelAnd("domain/jobs", "domain/policies"), "batches submit jobs against policies"},
		{"domain/quality", true, onlyKernelAnd("domain/jobs", "domain/policies"), "quality evaluates through the jobs' item runner and queue, with policy versions"},
		{"handlers", true, in("persistence", "blobstore", "precheck", "media", "ocr", "safehttp", "modelbackend", "grpcapi", "cmd"), "handlers translate the API to domain calls"},
		{"grpcapi", true, in("persistence", "blobstore", "precheck", "media", "ocr", "safehttp", "modelbackend", "handlers", "cmd"), "grpcapi translates gRPC to domain calls"},
		{"precheck", true, only("domain"), "adapters implement the kernel's ports"},
		{"ocr", true, only("domain"), "adapters implement the kernel's ports"},
		{"safehttp", true, only("domain"), "adapters implement the kernel's ports"},
		{"media", true, only("domain", "safehttp"), "adapters implement the kernel's ports"},
		{"modelbackend", true, only("domain"), "adapters implement the kernel's ports"},
		{"console", true, func(string) bool { return true }, "the console's assets reach the server only through the public API"},
		{"persistence", true, in("handlers", "grpcapi", "gen", "cmd", "precheck", "media", "ocr", "safehttp", "blobstore", "modelbackend"), "persistence implements the kernel's ports and knows no adapter nor API"},
	}
	for _, tc := range tests {
		if _, err := os.Stat(tc.dir); errors.Is(err, fs.ErrNotExist) {
			continue // a package of the layout not built yet (grpcapi before issue 19)
		}
		for file, ps := range projectImports(t, tc.dir) {
			if !tc.recursive && filepath.Dir(file) != filepath.Clean(tc.dir) {
				continue
			}
			for _, p := range ps {
				if tc.forbidden(p) {
					t.Errorf("%s imports %s: %s", file, p, tc.why)
				}
			}
		}
	}
}

// TestArchitectureTestSeesViolations guards the test above against passing
// because it reads nothing.
func TestArchitectureTestSeesViolations(t *testing.T) {
	imps := projectImports(t, "handlers")
	found := false
	for _, ps := range imps {
		for _, p := range ps {
			if p == module+"/domain" {
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the import scan found no handlers -> domain import; it is not reading the sources")
	}
}
