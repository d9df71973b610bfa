package media

import (
	"bufio"
	"context"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/contenteval/contenteval/domain"
)

// MaxASRChunkMs is the longest transcript chunk cut from recognised speech
// (docs/api.md#timed-media: at most 10 s, at word boundaries).
const MaxASRChunkMs = 10_000

// Word is one recognised word on the media timeline.
type Word struct {
	StartMs, EndMs int64
	Text           string
}

// ChunkWords cuts words into transcript chunks of at most maxMs, never inside
// a word: a chunk closes before the word that would take it past maxMs. A
// single word longer than maxMs (which a recogniser does not produce) is a
// chunk of its own rather than being split. A chunk spans from its first
// word's start to its last word's end; its text is the words joined by
// spaces. Words must be in time order, as recognisers emit them.
func ChunkWords(words []Word, maxMs int64) []domain.TranscriptChunk {
	var chunks []domain.TranscriptChunk
	var cur []string
	var start, end int64
	flush := func() {
		if len(cur) > 0 {
			chunks = append(chunks, domain.TranscriptChunk{StartMs: start, EndMs: end, Text: strings.Join(cur, " ")})
			cur = cur[:0]
		}
	}
	for _, w := range words {
		if len(cur) > 0 && w.EndMs-start > maxMs {
			flush()
		}
		if len(cur) == 0 {
			start, end = w.StartMs, w.EndMs
		}
		cur = append(cur, w.Text)
		end = max(end, w.EndMs)
	}
	flush()
	return chunks
}

// parsePocketsphinx reads the output of `pocketsphinx_continuous -time yes`:
// per utterance a line with the hypothesis text, then one line per segment
// "word start end prob" with times in seconds from the start of the input.
// Fillers (<s>, </s>, <sil>, [NOISE], ++GARBAGE++) are not words. Alternate
// pronunciations carry a "(2)" suffix that is not part of the word.
func parsePocketsphinx(r io.Reader) ([]Word, error) {
	var words []Word
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue // a hypothesis line, or noise
		}
		s, err1 := strconv.ParseFloat(f[1], 64)
		e, err2 := strconv.ParseFloat(f[2], 64)
		_, err3 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil || err3 != nil || s < 0 || e < s || math.IsInf(e, 0) || e > 1e7 {
			continue // a hypothesis of four words, which is not a segment line
		}
		w := f[0]
		if strings.HasPrefix(w, "<") || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "+") {
			continue
		}
		if i := strings.IndexByte(w, '('); i > 0 && strings.HasSuffix(w, ")") {
			w = w[:i]
		}
		words = append(words, Word{StartMs: secondsToMs(s), EndMs: secondsToMs(e), Text: w})
	}
	return words, sc.Err()
}

func secondsToMs(s float64) int64 { return int64(math.Round(s * 1000)) }

// asrDecodeArgs are ffmpeg's arguments to decode the audio of the file at
// path to what pocketsphinx reads (16 kHz mono PCM) on standard output.
func asrDecodeArgs(path, demuxer string) []string {
	args := append([]string{"-nostdin", "-hide_banner", "-nostats", "-loglevel", "error"}, inputArgs(path, demuxer)...)
	return append(args, "-vn", "-sn", "-dn", "-ac", "1", "-ar", "16000", "-f", "s16le", "pipe:1")
}

// recognise runs speech recognition over the audio of the file at path
// (read with demuxer, see inputArgs):
// ffmpeg decodes it to 16 kHz mono PCM into a pipe that pocketsphinx reads,
// so the audio is never on disk or in memory as a whole.
func (a *Analyzer) recognise(ctx context.Context, path, demuxer string) ([]Word, error) {
	// An OS pipe, not io.Pipe: each tool reads or writes its end directly,
	// so ffmpeg can exit while pocketsphinx (slower than ffmpeg) still
	// drains the kernel buffer, and no goroutine has to copy between them.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	decErr := make(chan error, 1)
	go func() {
		err := a.run.run(ctx, command{
			path:    a.tools.FFmpeg,
			args:    asrDecodeArgs(path, demuxer),
			timeout: a.cfg.ASRTimeout,
			stdout:  pw,
		})
		// Our copy of the write end must close for pocketsphinx to see the
		// end of the audio.
		pw.Close()
		decErr <- err
	}()
	var out strings.Builder
	err = a.run.run(ctx, command{
		path: a.tools.Pocketsphinx,
		args: []string{"-infile", "/dev/stdin", "-time", "yes", "-logfn", "/dev/null",
			"-hmm", a.tools.PocketsphinxModel},
		timeout:   a.cfg.ASRTimeout,
		stdin:     pr,
		stdout:    &out,
		maxStdout: 64 << 20,
	})
	// Closing the read end makes a decoder still writing fail at once.
	pr.Close()
	if err != nil {
		cancel()
	}
	derr := <-decErr
	if err == nil && derr != nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	return parsePocketsphinx(strings.NewReader(out.String()))
}
