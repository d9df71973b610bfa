package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runHashT(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"hash"}, args...), &out, &errb, func(string) string { return "" })
	return out.String(), errb.String(), code
}

func TestHashImage(t *testing.T) {
	t.Parallel()
	// A reference vector: expected.tsv gives its PDQ hash and quality.
	out, stderr, code := runHashT(t, filepath.Join("..", "..", "domain", "imaging", "testdata", "pdq", "misc", "wee.jpg"))
	want := "md5 8bbbaa9540800e378beadc8bbef7bb32\n" +
		"sha1 7fdbc7fe30189f0a16fbaae7162c9c5eb3c7987c\n" +
		"pdq 6227401f601ff4ccafcc9fad4b0d95d371a2eb7265a3285234d228ca94deeb2d 100\n"
	if code != 0 || out != want || stderr != "" {
		t.Errorf("code %d\nstdout %q\nstderr %q", code, out, stderr)
	}
}

func TestHashNonImage(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(p, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runHashT(t, p)
	want := "md5 900150983cd24fb0d6963f7d28e17f72\nsha1 a9993e364706816aba3e25717850c26c9cd0d89d\n"
	if code != 0 || out != want {
		t.Errorf("code %d stdout %q", code, out)
	}
	if !strings.Contains(stderr, "no pdq line") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("stderr %q", stderr)
	}
}

func TestHashErrors(t *testing.T) {
	t.Parallel()
	out, stderr, code := runHashT(t, filepath.Join(t.TempDir(), "missing.jpg"))
	if code != 1 || out != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "contenteval hash: ") {
		t.Errorf("missing file: code %d stdout %q stderr %q", code, out, stderr)
	}
	if _, _, code := runHashT(t); code != 2 {
		t.Errorf("no args: code %d", code)
	}
	if _, _, code := runHashT(t, "a", "b"); code != 2 {
		t.Errorf("two args: code %d", code)
	}
	if stdout, _, code := runHashT(t, "-h"); code != 0 || !strings.Contains(stdout, "Usage:") {
		t.Errorf("-h: code %d stdout %q", code, stdout)
	}
}
