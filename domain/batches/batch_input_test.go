package batches

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/contenteval/contenteval/domain"
	"github.com/stretchr/testify/require"
)

func parseAll(t testing.TB, in string, lim InputLimits) ([]*InputItem, error) {
	var items []*InputItem
	n, err := ParseInput(strings.NewReader(in), lim, func(it *InputItem) error {
		items = append(items, it)
		return nil
	})
	if err == nil {
		require.Equal(t, n, len(items))
	}
	return items, err
}

func TestParseBatchInput_Valid(t *testing.T) {
	t.Parallel()
	csvIn := "\uFEFFref_id,type,content\r\n" +
		"a,text,hello world\r\n" +
		"b,image_url,https://example.com/x.png\n" +
		"c,image,aGVsbG8=\n" +
		"d,video_url,https://example.com/v.mp4\n" +
		"e,audio_url,https://example.com/a.mp3\n" +
		"\"f,1\",TEXT,\"multi\nline, with \"\"quotes\"\"\"\n"
	items, err := parseAll(t, csvIn, InputLimits{})
	require.NoError(t, err)
	require.Len(t, items, 6)
	require.Equal(t, []string{"a", "b", "c", "d", "e", "f,1"}, refIDs(items))
	require.Equal(t, []int{2, 3, 4, 5, 6, 7}, lines(items))
	require.Equal(t, domain.ContentText, items[0].Content.Kind)
	require.Equal(t, "hello world", items[0].Content.Text)
	require.Equal(t, domain.ContentHash([]byte("hello world")), items[0].Summary.ContentHash)
	require.Equal(t, domain.ContentImageURL, items[1].Content.Kind)
	require.Equal(t, []byte("hello"), items[2].Content.Bytes)
	require.Equal(t, domain.ContentVideoURL, items[3].Content.Kind)
	require.Equal(t, domain.ContentAudioURL, items[4].Content.Kind)
	require.Equal(t, "multi\nline, with \"quotes\"", items[5].Content.Text)

	jsonl := "\n  {\"refId\":\"a\",\"contentData\":{\"text\":\"hi\",\"metadata\":{\"k\":\"v\"}}}\n" +
		"\n" +
		"{\"ref_id\":\"b\",\"content_data\":{\"image_url\":\"https://example.com/i.png\"},\"extra\":1}\r\n" +
		"{\"refId\":\"c\",\"contentData\":{\"image\":\"aGVsbG8=\"}}" // no final newline
	items, err = parseAll(t, jsonl, InputLimits{})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, refIDs(items))
	require.Equal(t, []int{2, 4, 5}, lines(items))
	require.Equal(t, map[string]string{"k": "v"}, items[0].Content.Metadata)
	require.Equal(t, "https://example.com/i.png", items[1].Content.URL)
	require.Equal(t, []byte("hello"), items[2].Content.Bytes)
}

func refIDs(items []*InputItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.RefID)
	}
	return out
}

func lines(items []*InputItem) []int {
	var out []int
	for _, it := range items {
		out = append(out, it.Line)
	}
	return out
}

// Every kind of invalid file is an *InputError naming its first bad
// lines; nothing after the first bad line is emitted.
func TestParseBatchInput_Invalid(t *testing.T) {
	t.Parallel()
	lim := InputLimits{MaxItems: 3, MaxTextBytes: 10, MaxLineBytes: 200}
	cases := map[string]struct {
		in   string
		want []string
	}{
		"empty":              {"", []string{"the file has no items"}},
		"blank":              {"  \n\n", []string{"the file has no items"}},
		"header only":        {"ref_id,type,content\n", []string{"the file has no items"}},
		"bad header":         {"id,kind,data\na,text,x\n", []string{"line 1: the header must be ref_id,type,content"}},
		"csv field count":    {"ref_id,type,content\na,text\nb,text,x,y\n", []string{"line 2: want 3 fields", "line 3: want 3 fields"}},
		"csv unknown type":   {"ref_id,type,content\na,pdf,x\n", []string{`line 2: unknown type "pdf"`}},
		"csv empty ref":      {"ref_id,type,content\n,text,x\n", []string{"line 2: ref_id is empty"}},
		"csv duplicate":      {"ref_id,type,content\na,text,x\nb,text,y\na,text,z\n", []string{`line 4: duplicate ref_id "a" (first on line 2)`}},
		"csv bad base64":     {"ref_id,type,content\na,image,@@@\n", []string{"line 2: content of type image is not valid base64"}},
		"csv bad url":        {"ref_id,type,content\na,image_url,ftp://x\n", []string{"line 2: content.imageUrl: must be an http or https URL"}},
		"csv text too long":  {"ref_id,type,content\na,text,01234567890\n", []string{"line 2: content.text: is 11 bytes; the limit is 10"}},
		"csv empty image":    {"ref_id,type,content\na,image,\n", []string{"line 2: content.image: must not be empty"}},
		"csv bad quote":      {"ref_id,type,content\na,text,\"x\"y\nb,text,z\n", []string{"line 2: malformed CSV quoting"}},
		"csv too many":       {"ref_id,type,content\na,text,x\nb,text,x\nc,text,x\nd,text,x\n", []string{"line 5: the file has more than 3 items"}},
		"csv long ref":       {"ref_id,type,content\n" + strings.Repeat("r", 300) + ",text,x\n", []string{"line 2: ref_id is longer than 256 bytes"}},
		"jsonl not json":     {"{\"refId\":\"a\",\"contentData\":{\"text\":\"x\"}}\n{oops\n", []string{"line 2: not a JSON object"}},
		"jsonl no ref":       {"{\"contentData\":{\"text\":\"x\"}}\n", []string{"line 1: refId is missing"}},
		"jsonl no content":   {"{\"refId\":\"a\"}\n", []string{"line 1: contentData is missing"}},
		"jsonl two contents": {"{\"refId\":\"a\",\"contentData\":{\"text\":\"x\",\"imageUrl\":\"https://e.com\"}}\n", []string{"line 1: content: must carry exactly one of"}},
		"jsonl wrong type":   {"{\"refId\":1,\"contentData\":{\"text\":\"x\"}}\n", []string{"line 1: refId has the wrong type"}},
		"jsonl duplicate":    {"{\"refId\":\"a\",\"contentData\":{\"text\":\"x\"}}\n{\"refId\":\"a\",\"contentData\":{\"text\":\"y\"}}\n", []string{`line 2: duplicate ref_id "a" (first on line 1)`}},
		"jsonl long line":    {"{\"refId\":\"a\",\"contentData\":{\"text\":\"" + strings.Repeat("x", 300) + "\"}}\n{\"refId\":\"b\",\"contentData\":{\"text\":\"y\"}}\n", []string{"line 1: the line is longer than 200 bytes"}},
		"jsonl array":        {"{\"refId\":\"a\",\"contentData\":{\"text\":\"x\"}}\n[1]\n", []string{"line 2: not a JSON object"}},
		"jsonl too many":     {strings.Repeat("{\"refId\":\"a\",\"contentData\":{\"text\":\"x\"}}\n", 1) + "{\"refId\":\"b\",\"contentData\":{\"text\":\"x\"}}\n{\"refId\":\"c\",\"contentData\":{\"text\":\"x\"}}\n{\"refId\":\"d\",\"contentData\":{\"text\":\"x\"}}\n", []string{"line 4: the file has more than 3 items"}},
		"csv NUL ref":        {"ref_id,type,content\na\x00b,text,x\n", []string{"line 2: ref_id contains a NUL character"}},
		"csv bad UTF-8 ref":  {"ref_id,type,content\na\xffb,text,x\n", []string{"line 2: ref_id is not valid UTF-8"}},
		"csv NUL text":       {"ref_id,type,content\na,text,x\x00y\n", []string{"line 2: content.text: contains a NUL character"}},
		"csv bad UTF-8 text": {"ref_id,type,content\na,text,x\xc3\n", []string{"line 2: content.text: is not valid UTF-8"}},
		"csv NUL url":        {"ref_id,type,content\na,image_url,https://e.com/\x00\n", []string{"line 2: content.imageUrl: contains a NUL character"}},
		"jsonl NUL ref":      {`{"refId":"a\u0000b","contentData":{"text":"x"}}` + "\n", []string{"line 1: ref_id contains a NUL character"}},
		"jsonl NUL snake":    {`{"ref_id":"\u0000","content_data":{"text":"x"}}` + "\n", []string{"line 1: ref_id contains a NUL character"}},
		"jsonl NUL text":     {`{"refId":"a","contentData":{"text":"x\u0000"}}` + "\n", []string{"line 1: content.text: contains a NUL character"}},
		"jsonl NUL captions": {`{"refId":"a","contentData":{"videoUrl":"https://e.com/v.mp4","captions":"\u0000"}}` + "\n", []string{"line 1: content.captions: contains a NUL character"}},
		"jsonl NUL meta key": {`{"refId":"a","contentData":{"text":"x","metadata":{"k\u0000":"v"}}}` + "\n", []string{"line 1: content.metadata: a key contains a NUL character"}},
		"jsonl NUL meta":     {`{"refId":"a","contentData":{"text":"x","metadata":{"b":"ok","k":"\u0000"}}}` + "\n", []string{"line 1: content.metadata.k: contains a NUL character"}},
		"jsonl bad UTF-8":    {"{\"refId\":\"a\xff\",\"contentData\":{\"text\":\"x\"}}\n", []string{"line 1: the line is not valid UTF-8"}},
		"five bad lines max": {"ref_id,type,content\n" + strings.Repeat(",text,x\n", 9), []string{"line 2:", "line 3:", "line 4:", "line 5:", "line 6: ref_id is empty"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			items, err := parseAll(t, c.in, lim)
			var be *InputError
			require.True(t, errors.As(err, &be), "want *InputError, got %v", err)
			require.LessOrEqual(t, len(be.Lines), 5)
			require.Len(t, be.Lines, len(c.want), "%v", be)
			for i, w := range c.want {
				require.Contains(t, be.Error(), w)
				_ = i
			}
			require.True(t, strings.HasPrefix(be.Error(), "invalid input file: "))
			// Items before the first bad line may have been emitted; none after.
			for _, it := range items {
				require.Less(t, it.Line, be.Lines[0].Line)
			}
		})
	}
}

// emit errors and reader errors come back as they are, not as an invalid
// file.
func TestParseBatchInput_Errors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, err := ParseInput(strings.NewReader("ref_id,type,content\na,text,x\n"), InputLimits{}, func(*InputItem) error { return boom })
	require.ErrorIs(t, err, boom)
	_, err = ParseInput(io.MultiReader(strings.NewReader("{\"refId\":\"a\",\"contentData\":{\"text\":\"x\"}}\n"), errReader{boom}), InputLimits{}, func(*InputItem) error { return nil })
	require.ErrorIs(t, err, boom)
	_, err = ParseInput(io.MultiReader(strings.NewReader("ref_id,type,content\n"), errReader{boom}), InputLimits{}, func(*InputItem) error { return nil })
	require.ErrorIs(t, err, boom)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// genReader produces n CSV or JSON lines on the fly, so the file never
// exists in memory.
type genReader struct {
	n, i  int
	jsonl bool
	buf   bytes.Buffer
}

func (g *genReader) Read(p []byte) (int, error) {
	for g.buf.Len() < len(p) && g.i <= g.n {
		switch {
		case g.i == 0 && !g.jsonl:
			g.buf.WriteString("ref_id,type,content\n")
		case g.i == 0:
		case g.jsonl:
			fmt.Fprintf(&g.buf, "{\"refId\":\"item-%07d\",\"contentData\":{\"text\":\"%s\"}}\n", g.i, strings.Repeat("lorem ipsum ", 1300))
		default:
			fmt.Fprintf(&g.buf, "item-%07d,text,%s\n", g.i, strings.Repeat("lorem ipsum ", 1300))
		}
		g.i++
	}
	if g.buf.Len() == 0 {
		return 0, io.EOF
	}
	return g.buf.Read(p)
}

// Parsing a ~100 MB file keeps the heap far below the file's size: only
// one line and the ref ids are held.
func TestParseBatchInput_Streaming(t *testing.T) {
	if testing.Short() {
		t.Skip("parses ~200 MB")
	}
	for _, jsonl := range []bool{false, true} {
		const n = 5_000 // ~16 KB per line
		var peak uint64
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		count := 0
		got, err := ParseInput(&genReader{n: n, jsonl: jsonl}, InputLimits{MaxItems: n}, func(it *InputItem) error {
			count++
			if count%10_000 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, n, got)
		grown := int64(peak) - int64(base)
		t.Logf("jsonl=%v: heap grew by %d KB while parsing %d MB", jsonl, grown>>10, (n*15600)>>20)
		require.Less(t, grown, int64(32<<20), "memory grows with the file")
	}
}

var fuzzLimits = InputLimits{MaxItems: 20, MaxTextBytes: 64, MaxLineBytes: 512}

// checkParse asserts the parser's contract on any input: no panic; a valid
// file emits between 1 and MaxItems items with unique ref ids, in line
// order; an invalid one is a *InputError naming 1-5 lines.
func checkParse(t *testing.T, parse func(io.Reader, InputLimits, func(*InputItem) error) (int, error), in []byte) {
	var items []*InputItem
	n, err := parse(bytes.NewReader(in), fuzzLimits, func(it *InputItem) error {
		items = append(items, it)
		return nil
	})
	if err != nil {
		var be *InputError
		if !errors.As(err, &be) {
			t.Fatalf("error is not a InputError: %v", err)
		}
		if len(be.Lines) < 1 || len(be.Lines) > maxReportedLines || be.Error() == "" {
			t.Fatalf("bad error: %#v", be)
		}
		return
	}
	if n < 1 || n > fuzzLimits.MaxItems || n != len(items) {
		t.Fatalf("n=%d, %d items", n, len(items))
	}
	seen := map[string]bool{}
	last := 0
	for _, it := range items {
		if it.RefID == "" || seen[it.RefID] || it.Line <= last {
			t.Fatalf("bad item %+v", it)
		}
		seen[it.RefID], last = true, it.Line
		if it.Content.Kind == domain.ContentText && len(it.Content.Text) > fuzzLimits.MaxTextBytes {
			t.Fatalf("text over the limit passed")
		}
	}
}

func FuzzParseCSV(f *testing.F) {
	for _, s := range []string{
		"ref_id,type,content\na,text,hello\nb,image_url,https://e.com/x.png\n",
		"ref_id,type,content\n\"a\nb\",text,\"q\"\"q\"\nc,image,aGk=\n",
		"ref_id,type,content\na,text\n",
		"ref_id,type,content\na,text,x\na,text,y\n",
		"\uFEFFref_id,type,content\r\na,video_url,http://x\r\n",
		"x\"y,z\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkParse(t, ParseCSV, in) })
}

func FuzzParseJSONL(f *testing.F) {
	for _, s := range []string{
		"{\"refId\":\"a\",\"contentData\":{\"text\":\"hi\"}}\n{\"refId\":\"b\",\"contentData\":{\"imageUrl\":\"https://e.com\"}}",
		"{\"ref_id\":\"a\",\"content_data\":{\"image\":\"aGk=\",\"metadata\":{\"k\":\"v\"}}}\r\n\r\n",
		"{\"refId\":\"a\",\"contentData\":{}}\n",
		"{\"refId\":\"a\",\"contentData\":{\"text\":\"x\"}}\n{\"refId\":\"a\",\"contentData\":{\"text\":\"x\"}}\n",
		"[]\n{}\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkParse(t, ParseJSONL, in) })
}
