package rules

import (
	"math/rand/v2"
	"strings"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// tiktokenCount is the reference: tiktoken-go's own encoder of o200k_base.
func tiktokenCount(tb testing.TB) func(string) int {
	tb.Helper()
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	e, err := tiktoken.GetEncoding("o200k_base")
	if err != nil {
		tb.Fatal(err)
	}
	return func(s string) int { return len(e.EncodeOrdinary(s)) }
}

// randomTokenText mixes what the pre-tokenizer treats differently: letters of both
// cases, digits, punctuation, spaces, newlines, apostrophes, accents, CJK and emoji.
func randomTokenText(r *rand.Rand, n int) string {
	alphabet := []string{"a", "b", "e", "t", "s", "A", "Q", "0", "7", " ", "  ", "\n", "\r\n", "'", "'s", ".", "//", "!",
		"é", "ß", "\u0301", "中", "文", "😀", "\u200d", "\t", "-", "_", "kill", "the", "ing"}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

// TestCountTokensMatchesTiktoken checks the linear counter against tiktoken-go on the
// same vocabulary: the counts are part of the API, so the merge order must be the same.
func TestCountTokensMatchesTiktoken(t *testing.T) {
	t.Parallel()
	want := tiktokenCount(t)
	words := benchWords(t)
	tests := []string{
		"", "a", "hello world", "  leading and trailing  ", "I'm here, they'll see it's done.",
		"LABEL \"Threat\": \"remove\" {\n    ~(\"i will kill you\")\n}\n// a comment\n",
		strings.Repeat("abcdefghij", 300),
		strings.Repeat("a", 2000),
		strings.Repeat("ab", 1000),
		strings.Repeat("1234567890", 50),
		strings.Repeat("é", 500),
		strings.Repeat("中文", 300),
		strings.Repeat("😀", 200),
		strings.Join(words[:3000], ""),
		benchText(words, nil, 8<<10, 7),
	}
	r := rand.New(rand.NewPCG(11, 13))
	for range 200 {
		tests = append(tests, randomTokenText(r, 1+r.IntN(300)))
	}
	for _, s := range tests {
		if got, w := CountTokens(s), want(s); got != w {
			t.Errorf("CountTokens(%.60q) = %d, tiktoken counts %d", s, got, w)
		}
	}
}

// FuzzCountTokens checks the linear counter against tiktoken-go on any text, invalid
// UTF-8 included.
func FuzzCountTokens(f *testing.F) {
	for _, s := range []string{"hello world", "I'm \"quoted\"\n\n", strings.Repeat("ab", 40), "中文😀é\u0301", "\xff\xfe a"} {
		f.Add(s)
	}
	want := tiktokenCount(f)
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4<<10 {
			return // the reference is quadratic in long words
		}
		if got, w := CountTokens(s), want(s); got != w {
			t.Errorf("CountTokens(%q) = %d, tiktoken counts %d", s, got, w)
		}
	})
}
