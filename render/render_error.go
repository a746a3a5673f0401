package render

import (
	"fmt"
	"strings"
)

// RenderError is a problem with the content of the repository: a manifest
// that does not parse, lacks a required field, or collides with another.
// Retrying the same revision gives the same error.
type RenderError struct {
	Path string // slash-separated, relative to the repository root; "" for no file
	Line int    // 1-based; 0 when unknown
	Err  error
}

func (e *RenderError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *RenderError) Unwrap() error { return e.Err }

// lineError is an error at a line of the file being decoded; render turns it
// into a RenderError with the file's path.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e *lineError) Unwrap() error { return e.err }

func errAt(line int, format string, args ...any) error {
	return &lineError{line: line, err: fmt.Errorf(format, args...)}
}

// RenderErrors are several problems found in one render, in the order
// found. errors.As finds the first *RenderError in it.
type RenderErrors []*RenderError

func (e RenderErrors) Error() string {
	var b strings.Builder
	for i, re := range e {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(re.Error())
	}
	return b.String()
}

func (e RenderErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, re := range e {
		out[i] = re
	}
	return out
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
