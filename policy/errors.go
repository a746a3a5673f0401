package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// CompileError is returned by Load and LoadDir when a policy does not parse or
// compile. Each entry names the file, line and column.
type CompileError struct {
	Errors []SourceError
}

// SourceError is one problem at one place in a Rego file.
type SourceError struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Code    string `json:"code,omitempty"` // e.g. rego_parse_error, rego_type_error
	Message string `json:"message"`
}

func (e SourceError) String() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
		}
		b.WriteString(": ")
	}
	if e.Code != "" {
		b.WriteString(e.Code)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

func (e *CompileError) Error() string {
	switch len(e.Errors) {
	case 0:
		return "policy does not compile"
	case 1:
		return "policy does not compile: " + e.Errors[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "policy does not compile: %d errors:", len(e.Errors))
	for _, se := range e.Errors {
		b.WriteString("\n\t")
		b.WriteString(se.String())
	}
	return b.String()
}

// compileErrorFrom turns OPA's parse and compile errors into a CompileError.
// display maps the module name OPA knows to the name shown to people.
func compileErrorFrom(err error, display func(string) string) *CompileError {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) {
		var one *ast.Error
		if errors.As(err, &one) {
			astErrs = ast.Errors{one}
		} else {
			return &CompileError{Errors: []SourceError{{Message: err.Error()}}}
		}
	}
	ce := &CompileError{Errors: make([]SourceError, 0, len(astErrs))}
	for _, ae := range astErrs {
		se := SourceError{Code: ae.Code, Message: explainDenied(ae.Message)}
		if ae.Location != nil {
			se.File = display(ae.Location.File)
			se.Line = ae.Location.Row
			se.Col = ae.Location.Col
		}
		ce.Errors = append(ce.Errors, se)
	}
	return ce
}
