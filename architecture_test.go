package contenteval

import (
	"errors"
	"go/ast"
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

// TestDependenciesPointInward enforces docs/architecture.md#layers: cmd -> handlers -> domain
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

// TestLayers enforces the rest of docs/architecture.md#layers, package by package: the
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
		allowed := map[string]bool{module + "/domain": true, module + "/domain/rules": true, module + "/domain/imaging": true, module + "/domain/traces": true,
			module + "/domain/paging": true}
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
		{"domain/paging", true, only("domain"), "paging knows only the kernel's errors"},
		{"domain/traces", true, func(string) bool { return true }, "the span helpers are a leaf: OpenTelemetry's API only"},
		{"tracing", true, only("domain/traces"), "tracing installs the SDK and switches the span helpers on"},
		{"domain/evaluation", true, onlyKernelAnd(), "the item runner knows the kernel's ports and the rule engine only"},
		{"domain/policies", true, onlyKernelAnd("domain/evaluation"), "policies compile their versions into the one plan cache"},
		{"domain/webhooks", true, onlyKernelAnd(), "an aggregate knows the kernel and the aggregates it is built on"},
		{"domain/access", true, onlyKernelAnd(), "an aggregate knows the kernel and the aggregates it is built on"},
		{"domain/jobs", true, onlyKernelAnd("domain/evaluation", "domain/policies", "domain/webhooks"), "jobs are evaluated through the item runner with a policy's active version and check their webhook target"},
		{"domain/labels", true, onlyKernelAnd("domain/evaluation", "domain/jobs", "domain/policies"), "labels evaluate through the item runner, validate content as jobs do and check rule text as policies do"},
		{"domain/batches", true, onlyKernelAnd("domain/evaluation", "domain/jobs", "domain/policies", "domain/webhooks"), "batches submit jobs against policies, with webhook targets"},
		{"domain/quality", true, onlyKernelAnd("domain/evaluation", "domain/jobs", "domain/policies"), "quality evaluates through the item runner, on the jobs' queue, with policy versions"},
		{"domain/moderation", true, onlyKernelAnd("domain/jobs", "domain/labels", "domain/policies"), "moderation submits through the job and label evaluation services, resolving policies by key"},
		{"handlers", true, in("persistence", "blobstore", "precheck", "media", "ocr", "safehttp", "modelbackend", "grpcapi", "cmd"), "handlers translate the API to domain calls"},
		{"grpcapi", true, in("persistence", "blobstore", "precheck", "media", "ocr", "safehttp", "modelbackend", "handlers", "cmd"), "grpcapi translates gRPC to domain calls"},
		{"precheck", true, only("domain"), "adapters implement the kernel's ports"},
		{"ocr", true, only("domain"), "adapters implement the kernel's ports"},
		{"safehttp", true, only("domain", "tracing"), "adapters implement the kernel's ports (and are instrumented when tracing is on)"},
		{"media", true, only("domain", "safehttp"), "adapters implement the kernel's ports"},
		{"modelbackend", true, only("domain", "domain/traces", "tracing"), "adapters implement the kernel's ports (and are instrumented when tracing is on)"},
		{"console", true, func(string) bool { return true }, "the console's assets reach the server only through the public API"},
		{"persistence", true, in("handlers", "grpcapi", "gen", "cmd", "precheck", "media", "ocr", "safehttp", "blobstore", "modelbackend"), "persistence implements the kernel's ports and knows no adapter nor API"},
	}
	for _, tc := range tests {
		if _, err := os.Stat(tc.dir); errors.Is(err, fs.ErrNotExist) {
			continue // a package of the layout not built yet (as grpcapi once was)
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

// kernelFuncMaxBody is the longest body, in lines between the braces, of a
// function of the kernel that is neither a method nor a constructor: room
// for a guard and a switch over a few cases, not for an algorithm.
const kernelFuncMaxBody = 12

// TestKernelHoldsTypesAndPorts keeps the root package domain to entities,
// states, errors and ports: every function it declares is a method of one
// of its types, a constructor (New...), or at most kernelFuncMaxBody lines
// long. Anything longer is behaviour, and belongs to the package that owns
// it (an aggregate, domain/paging, the rule engine).
func TestKernelHoldsTypesAndPorts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("domain", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Body == nil || strings.HasPrefix(fd.Name.Name, "New") {
				continue
			}
			seen++
			body := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Body.Lbrace).Line - 1
			if body > kernelFuncMaxBody {
				t.Errorf("%s: func %s has a body of %d lines (at most %d in the kernel): move it to the package that owns it",
					fset.Position(fd.Pos()), fd.Name.Name, body, kernelFuncMaxBody)
			}
		}
	}
	if seen == 0 {
		t.Fatal("found no kernel functions: the test is not reading domain/")
	}
}

// goFiles calls fn with every hand-written Go file of the repository (not
// gen/, node_modules, testdata, nor a file that says it is generated),
// parsed with its comments.
func goFiles(t *testing.T, fn func(path string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "gen", "node_modules", "testdata":
				return filepath.SkipDir
			}
			if path != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		fn(path, fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// rulesName returns the name f refers to the rule engine's package by
// ("" when f does not import it).
func rulesName(f *ast.File) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == module+"/domain/rules" {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return "rules"
		}
	}
	return ""
}

// evaluationEntryPoints are what of the rule engine only the item runner
// uses: evaluation options (without them no plan can be evaluated: a
// Plan's Evaluate takes them) and the plan cache (one, not one per
// service).
var evaluationEntryPoints = map[string]bool{"EvalOptions": true, "Cache": true, "NewCache": true}

// outsideTheRunner are the files allowed to use them outside
// domain/evaluation, and why.
var outsideTheRunner = map[string]string{
	filepath.Join("cmd", "contenteval", "rules_cmd.go"): "`contenteval rules eval` evaluates a policy file offline for its author: no item, no job, no server",
}

// TestOnePlaceEvaluates enforces docs/architecture.md#where-an-item-is-evaluated:
// domain/evaluation is the only package that evaluates content with the
// rule engine. Outside it (and the engine itself), no hand-written file names
// rules.EvalOptions, which a Plan's Evaluate needs, nor builds a plan cache.
func TestOnePlaceEvaluates(t *testing.T) {
	inRunner := 0
	goFiles(t, func(path string, fset *token.FileSet, f *ast.File) {
		dir := filepath.ToSlash(filepath.Dir(path))
		if dir == "domain/rules" || strings.HasSuffix(path, "_test.go") {
			return
		}
		name := rulesName(f)
		if name == "" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !evaluationEntryPoints[sel.Sel.Name] {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != name {
				return true
			}
			switch {
			case dir == "domain/evaluation":
				inRunner++
			case outsideTheRunner[path] != "":
			default:
				t.Errorf("%s: uses rules.%s: only domain/evaluation evaluates content (docs/architecture.md#where-an-item-is-evaluated)",
					fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	})
	if inRunner == 0 {
		t.Fatal("found no use of the rule engine in domain/evaluation: the test is not reading the sources")
	}
}

// Size bounds of hand-written code: a file a reader can hold in mind, a
// function that fits on a couple of screens. Generated code (gen/) is
// exempt; the bench harness's functions too (its main programs wire whole
// scenarios), but not its files.
const (
	maxFileLines = 500
	maxFuncLines = 100
)

// TestSizes enforces maxFileLines for every hand-written Go file and
// maxFuncLines for every function declaration outside bench/ (from its
// func keyword to its closing brace, function literals inside it
// included).
func TestSizes(t *testing.T) {
	files := 0
	goFiles(t, func(path string, fset *token.FileSet, f *ast.File) {
		files++
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			t.Errorf("%s has %d lines (at most %d): split it by what its parts are about", path, n, maxFileLines)
		}
		if strings.HasPrefix(filepath.ToSlash(path), "bench/") {
			return
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.Body.Rbrace).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: func %s has %d lines (at most %d): split it", fset.Position(fd.Pos()), fd.Name.Name, n, maxFuncLines)
			}
		}
	})
	if files < 100 {
		t.Fatalf("read %d Go files: the test is not reading the repository", files)
	}
}

// TestJobErrorsAreCopies: the job error a job carries is a copy, never a
// pointer to one of the kernel's ErrJob... variables, which a change of
// the job's error would overwrite for every job. Tests may point at them.
func TestJobErrorsAreCopies(t *testing.T) {
	goFiles(t, func(path string, fset *token.FileSet, f *ast.File) {
		if strings.HasSuffix(path, "_test.go") {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			u, ok := n.(*ast.UnaryExpr)
			if !ok || u.Op != token.AND {
				return true
			}
			name := ""
			switch x := u.X.(type) {
			case *ast.SelectorExpr:
				name = x.Sel.Name
			case *ast.Ident:
				name = x.Name
			}
			if strings.HasPrefix(name, "ErrJob") {
				t.Errorf("%s: &%s: a job's error must be a copy of it", fset.Position(u.Pos()), name)
			}
			return true
		})
	})
}
