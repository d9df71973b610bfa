package rules

import (
	"fmt"
	"sort"
	"strings"
)

// CompileError is one problem found in rule text. Line and Column are 1-based; Column
// counts characters.
type CompileError struct {
	Message string
	Line    int
	Column  int
}

func (e CompileError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Message)
}

// CompileErrors is returned by Compile when the text is invalid. It holds every error
// found, in source order, so an author can fix them all in one round trip.
type CompileErrors struct {
	Errors []CompileError
}

func (e *CompileErrors) Error() string {
	switch len(e.Errors) {
	case 0:
		return "rules: invalid text"
	case 1:
		return "rules: " + e.Errors[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rules: %d errors: %s", len(e.Errors), e.Errors[0].Error())
	for _, ce := range e.Errors[1:] {
		b.WriteString("; ")
		b.WriteString(ce.Error())
	}
	return b.String()
}

// maxReportedErrors bounds the error list: garbage input would otherwise produce one
// error per character and a response as large as the input.
const maxReportedErrors = 100

type errorList struct {
	errs      []CompileError
	truncated bool
}

func (l *errorList) add(p srcPos, format string, args ...any) {
	if len(l.errs) >= maxReportedErrors {
		l.truncated = true
		return
	}
	l.errs = append(l.errs, CompileError{Message: fmt.Sprintf(format, args...), Line: p.Line, Column: p.Column})
}

func (l *errorList) result() error {
	if len(l.errs) == 0 {
		return nil
	}
	sort.SliceStable(l.errs, func(i, j int) bool {
		a, b := l.errs[i], l.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	out := make([]CompileError, 0, len(l.errs)+1)
	for i, e := range l.errs {
		// The parser may report the same spot twice while resynchronising.
		if i > 0 && e == l.errs[i-1] {
			continue
		}
		out = append(out, e)
	}
	if l.truncated {
		last := out[len(out)-1]
		out = append(out, CompileError{Message: fmt.Sprintf("too many errors; only the first %d are reported", maxReportedErrors), Line: last.Line, Column: last.Column})
	}
	return &CompileErrors{Errors: out}
}
