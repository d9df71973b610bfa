package docs_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// absentCitation matches text that sends a reader to something the repository does not
// hold: the design, specification and rule-language documents the project was written
// from, their numbered sections, and the tracker's issue numbers. A comment says its
// point itself or cites docs/FILE.md#section, which the test above resolves. The pattern
// lives in testdata, so that this file does not match itself.
var absentCitation = regexp.MustCompile(strings.TrimSpace(mustReadFile(filepath.Join("testdata", "absent_citation.re"))))

// mustReadFile is a fixture's text; the package's tests cannot run without it.
func mustReadFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// rfcSection is the one kind of numbered section sign that names a document anyone can
// read.
var rfcSection = regexp.MustCompile(`RFC ?[0-9]+,? §`)

// Hand-written text files by extension, and by name for those without one.
var (
	scannedExt  = map[string]bool{".go": true, ".sql": true, ".ts": true, ".tsx": true, ".mts": true, ".mjs": true, ".js": true, ".sh": true, ".yaml": true, ".yml": true, ".proto": true, ".md": true, ".py": true, ".css": true, ".html": true, ".tpl": true}
	scannedName = map[string]bool{"Makefile": true, "Containerfile": true, "run": true}
	// Generated or vendored trees, fixtures and build output.
	skippedDir = map[string]bool{".git": true, "node_modules": true, "gen": true, "dist": true, "testdata": true, ".artifacts": true, ".bin": true}
	// The benchmark records are dated measurements of past changes, each named as it
	// was tracked when it was measured; they are history, not guidance for the code.
	// data is `make run`'s database directory; this file names what it looks for.
	skippedPath = map[string]bool{"bench/results": true, "bench/README.md": true, "data": true, "docs/citations_test.go": true}
)

func TestNoCitationsOfAbsentDocuments(t *testing.T) {
	scanned, found := 0, 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != repoRoot && (skippedDir[d.Name()] || skippedPath[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if skippedPath[rel] || !(scannedExt[filepath.Ext(path)] || scannedName[d.Name()]) {
			return nil
		}
		scanned++
		lines, err := absentCitations(path)
		for _, l := range lines {
			t.Errorf("%s:%s", rel, l)
			found++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d files: the walk is missing the repository", scanned)
	}
	if found > 0 {
		t.Logf("%d lines cite documents or issues outside the repository: state the point, or cite docs/FILE.md#section", found)
	}
}

// absentCitations returns "line: text" for each line of the file citing something absent.
func absentCitations(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !absentCitation.MatchString(rfcSection.ReplaceAllString(line, "RFC ")) {
			continue
		}
		out = append(out, strconv.Itoa(n)+": "+strings.TrimSpace(line))
	}
	return out, sc.Err()
}

// TestAbsentCitationPattern runs the check on the lines of
// testdata/citation_cases.txt (kept out of this file, which would
// otherwise hold the very citations it forbids).
func TestAbsentCitationPattern(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "citation_cases.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, row := range strings.Split(string(data), "\n") {
		verdict, line, ok := strings.Cut(row, "\t")
		if !ok || strings.HasPrefix(row, "#") {
			continue
		}
		n++
		got := absentCitation.MatchString(rfcSection.ReplaceAllString(line, "RFC "))
		if got != (verdict == "cite") {
			t.Errorf("%q: match %v, want %s", line, got, verdict)
		}
	}
	if n < 10 {
		t.Fatalf("testdata/citation_cases.txt holds %d cases", n)
	}
}

// settingName is a setting of cmd/contenteval: its flag (when it has one) and its variable.
var settingName = regexp.MustCompile(`(?:\{"([a-z0-9-]+)", )?"(CONTENTEVAL_[A-Z0-9_]+)"`)

// TestOperationsNamesEverySetting keeps docs/operations.md#configuration complete: every
// flag and variable the binary reads is named there, so a new setting fails here until
// it is documented.
func TestOperationsNamesEverySetting(t *testing.T) {
	doc, err := os.ReadFile("operations.md")
	if err != nil {
		t.Fatal(err)
	}
	sources, err := filepath.Glob(filepath.Join(repoRoot, "cmd", "contenteval", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range sources {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range settingName.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "" {
				names["--"+m[1]] = true
			}
			names[m[2]] = true
		}
	}
	if len(names) < 40 {
		t.Fatalf("found %d settings in cmd/contenteval: the pattern no longer matches how they are declared", len(names))
	}
	for n := range names {
		if !strings.Contains(string(doc), "`"+n) {
			t.Errorf("docs/operations.md does not name %s", n)
		}
	}
}
