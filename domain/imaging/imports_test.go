package imaging

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyDomain keeps the package pure (STYLE: dependencies point
// inward): of this project it may import only domain, never handlers,
// persistence or anything with I/O of its own.
func TestImportsOnlyDomain(t *testing.T) {
	t.Parallel()
	const module = "github.com/contenteval/contenteval/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) && path != module+"domain" && path != module+"domain/imaging" {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
