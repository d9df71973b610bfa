package media

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/contenteval/contenteval/domain/traces"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProcessLimits bound one subprocess. Zero fields are not applied.
type ProcessLimits struct {
	// Nice is the niceness the tools run at (0..19), so analysis yields the
	// CPU to the API when both share a machine.
	Nice int
	// CPUSeconds caps CPU time (RLIMIT_CPU), a backstop behind the deadline
	// for a process that would spin on a crafted input.
	CPUSeconds int64
	// AddressSpace caps virtual memory in bytes (RLIMIT_AS): a decoder bomb
	// gets ENOMEM instead of taking the host's memory.
	AddressSpace int64
	// FileSize caps the size of any file a tool writes (RLIMIT_FSIZE), so a
	// remux cannot fill the disk.
	FileSize int64
}

// errOutputTooLarge is returned when a tool writes more to stdout than the
// caller allowed (a frame that would not fit the image limits, say).
var errOutputTooLarge = errors.New("tool output exceeds its limit")

// toolTimeoutError says a tool overran its own deadline (not the caller's).
type toolTimeoutError struct {
	tool    string
	timeout time.Duration
}

func (e *toolTimeoutError) Error() string {
	return fmt.Sprintf("%s did not finish within %s", e.tool, e.timeout)
}

// toolError is a tool that exited unsuccessfully; Stderr is the tail of its
// diagnostics, for logs.
type toolError struct {
	tool   string
	err    error
	Stderr string
}

func (e *toolError) Error() string {
	return fmt.Sprintf("%s failed: %v: %s", e.tool, e.err, strings.TrimSpace(e.Stderr))
}

func (e *toolError) Unwrap() error { return e.err }

// command is one subprocess invocation.
type command struct {
	path    string
	args    []string
	timeout time.Duration
	// stdin feeds standard input; nil: none (ffmpeg also gets -nostdin). An
	// *os.File is handed to the child as is.
	stdin io.Reader
	// stdout receives standard output; nil discards it. At most maxStdout
	// bytes are accepted; 0 is unbounded and only for an *os.File pipe into
	// another bounded tool.
	stdout    io.Writer
	maxStdout int64
	// stderrLine, when set, sees each line of standard error as it arrives
	// (lines longer than maxLine are cut). An error stops the process and
	// is returned by run.
	stderrLine func(line string) error
}

// maxLine bounds one diagnostic line; showinfo lines are under 1 KiB.
const maxLine = 16 << 10

// stderrTailBytes is how much of a tool's diagnostics is kept for the log.
const stderrTailBytes = 4 << 10

// runner starts the tools under the configured limits.
type runner struct {
	limits  ProcessLimits
	prlimit string // path of util-linux prlimit, "" when absent
	nice    string // path of nice, "" when absent
}

// wrap prefixes the limit tools to argv: they apply the limits and then exec
// the tool itself, so the limits hold from the first instruction (setting
// them on the child after it started would leave a window).
func (r *runner) wrap(path string, args []string) (string, []string) {
	argv := append([]string{path}, args...)
	if r.nice != "" && r.limits.Nice > 0 {
		argv = append([]string{r.nice, "-n", strconv.Itoa(r.limits.Nice)}, argv...)
	}
	if r.prlimit != "" {
		var lim []string
		if r.limits.CPUSeconds > 0 {
			lim = append(lim, "--cpu="+strconv.FormatInt(r.limits.CPUSeconds, 10))
		}
		if r.limits.AddressSpace > 0 {
			lim = append(lim, "--as="+strconv.FormatInt(r.limits.AddressSpace, 10))
		}
		if r.limits.FileSize > 0 {
			lim = append(lim, "--fsize="+strconv.FormatInt(r.limits.FileSize, 10))
		}
		if len(lim) > 0 {
			argv = append(append(append([]string{r.prlimit}, lim...), "--"), argv...)
		}
	}
	return argv[0], argv[1:]
}

// run runs c to completion. Errors: *toolTimeoutError when c.timeout ran
// out, ctx's error when ctx ended, errOutputTooLarge, the stderrLine
// callback's error, or *toolError for a non-zero exit.
func (r *runner) run(ctx context.Context, c command) (err error) {
	// The tool's name only: its arguments name files of the content.
	ctx, span := traces.Start(ctx, "media.tool")
	if span.IsRecording() {
		span.SetAttributes(traces.Tool(filepath.Base(c.path)))
	}
	defer func() { traces.Fail(span, err); span.End() }()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tctx := cctx
	if c.timeout > 0 {
		var tcancel context.CancelFunc
		tctx, tcancel = context.WithTimeout(cctx, c.timeout)
		defer tcancel()
	}
	path, args := r.wrap(c.path, c.args)
	cmd := exec.CommandContext(tctx, path, args...)
	setProcessGroup(cmd)
	// Give the group a moment after the kill for pipes held by helpers to
	// close; then Wait returns regardless.
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin = c.stdin
	var out *limitWriter
	if f, ok := c.stdout.(*os.File); ok && c.maxStdout <= 0 {
		// A pipe between two tools: the child writes to it directly, with
		// no copying goroutine that could outlive the child.
		cmd.Stdout = f
	} else if c.stdout != nil {
		out = &limitWriter{w: c.stdout, n: c.maxStdout, onFail: func(err error) { cancel(err) }}
		cmd.Stdout = out
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return &toolError{tool: toolName(c.path), err: err}
	}
	tail := &tailBuffer{max: stderrTailBytes}
	var cbErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		br := bufio.NewReaderSize(stderr, 4096)
		var line []byte
		for {
			chunk, err := br.ReadSlice('\n')
			if len(line)+len(chunk) <= maxLine {
				line = append(line, chunk...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if len(line) > 0 {
				tail.Write(line)
				if c.stderrLine != nil && cbErr == nil {
					if e := c.stderrLine(strings.TrimRight(string(line), "\r\n")); e != nil {
						cbErr = e
						cancel(e)
					}
				}
				line = line[:0]
			}
			if err != nil {
				return
			}
		}
	}()
	wg.Wait()
	waitErr := cmd.Wait()
	switch {
	case cbErr != nil:
		return cbErr
	case out != nil && out.err != nil:
		return out.err
	case ctx.Err() != nil:
		return ctx.Err()
	case tctx.Err() == context.DeadlineExceeded:
		return &toolTimeoutError{tool: toolName(c.path), timeout: c.timeout}
	case waitErr != nil:
		return &toolError{tool: toolName(c.path), err: waitErr, Stderr: tail.String()}
	}
	return nil
}

func toolName(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// limitWriter passes at most n bytes (n <= 0: unlimited) to w. The first
// write beyond them, or the first error of w (a consumer that rejects what
// the tool produced), stops the tool: run returns that error.
type limitWriter struct {
	w          io.Writer
	n, written int64
	err        error
	onFail     func(error)
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.n > 0 && l.written+int64(len(p)) > l.n {
		l.err = errOutputTooLarge
		l.onFail(l.err)
		return 0, l.err
	}
	l.written += int64(len(p))
	n, err := l.w.Write(p)
	if err != nil {
		l.err = err
		l.onFail(err)
	}
	return n, err
}

// tailBuffer keeps the last max bytes written, for error logs.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
}

func (t *tailBuffer) String() string {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return string(bytes.ToValidUTF8(b, []byte("?")))
}
