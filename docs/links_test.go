// Package docs_test checks the repository's documentation: code comments and the
// documents themselves cite sections as docs/FILE.md#section, and a renamed heading or
// a missing file would otherwise leave those citations pointing nowhere.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

const repoRoot = ".."

var (
	// A citation from anywhere in the repository: docs/FILE.md or docs/FILE.md#section.
	repoCitation = regexp.MustCompile(`docs/([A-Za-z0-9_-]+\.md)(#[a-z0-9_-]+)?`)
	// A Markdown link inside docs/ to a sibling document or to a section of this one.
	docLink    = regexp.MustCompile(`\]\(([A-Za-z0-9_-]+\.md)?(#[a-z0-9_-]+)?\)`)
	headingRe  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	fenceStart = "```"
)

// slug is the anchor GitHub gives a heading: lower case, punctuation other than
// hyphens and underscores dropped, spaces made hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the section anchors of a Markdown text, skipping fenced code.
func anchors(text string) map[string]bool {
	var prose strings.Builder
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), fenceStart) {
			inFence = !inFence
			continue
		}
		if !inFence {
			prose.WriteString(line)
			prose.WriteByte('\n')
		}
	}
	out := map[string]bool{}
	for _, m := range headingRe.FindAllStringSubmatch(prose.String(), -1) {
		out[slug(strings.Trim(m[1], "`"))] = true
	}
	return out
}

type docIndex map[string]map[string]bool // file name -> its anchors

func readDocs(t *testing.T) docIndex {
	t.Helper()
	paths, err := filepath.Glob("*.md")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no documents found in docs/ (%v)", err)
	}
	idx := docIndex{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		idx[p] = anchors(string(b))
	}
	return idx
}

// check reports a citation of file#anchor that does not resolve.
func (idx docIndex) check(t *testing.T, where, file, anchor string) {
	t.Helper()
	heads, ok := idx[file]
	switch {
	case !ok:
		t.Errorf("%s cites docs/%s, which does not exist", where, file)
	case anchor != "" && !heads[strings.TrimPrefix(anchor, "#")]:
		t.Errorf("%s cites docs/%s%s, which has no such section", where, file, anchor)
	}
}

func TestDocsLinksResolve(t *testing.T) {
	idx := readDocs(t)
	for file := range idx {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if target == "" {
				target = file
			}
			if m[1] == "" && m[2] == "" {
				continue
			}
			idx.check(t, "docs/"+file, target, m[2])
		}
	}
}

func TestCodeCitationsOfDocsResolve(t *testing.T) {
	idx := readDocs(t)
	skip := map[string]bool{".git": true, "node_modules": true, "gen": true, "dist": true, "docs": true}
	cited := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] && path != repoRoot {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".sql", ".md", ".yaml", ".ts", ".mjs":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		for _, m := range repoCitation.FindAllStringSubmatch(string(b), -1) {
			idx.check(t, rel, m[1], m[2])
			cited++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited == 0 {
		t.Fatal("found no citation of docs/ at all: the walk is reading nothing")
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Scores and outcomes", "scores-and-outcomes"},
		{"A POST /v1/jobs, file by file", "a-post-v1jobs-file-by-file"},
		{"Exact phrase: `=(\"…\")`", "exact-phrase-"},
		{"gRPC", "grpc"},
	}
	for _, tt := range tests {
		if got := slug(tt.heading); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}
