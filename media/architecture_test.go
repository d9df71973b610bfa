package media

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNothingInnerImportsMedia: media is an adapter (docs/architecture.md#layers) — domain
// declares what it needs and handlers never run subprocesses; only cmd wires
// this package in.
func TestNothingInnerImportsMedia(t *testing.T) {
	t.Parallel()
	const media = "github.com/contenteval/contenteval/media"
	seen := 0
	for _, dir := range []string{"../domain", "../handlers"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			seen++
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == media || strings.HasPrefix(p, media+"/") {
					t.Errorf("%s imports %s", path, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen == 0 {
		t.Fatal("no files checked")
	}
}
