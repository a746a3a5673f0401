package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReasonsDocumented checks that every condition reason of reasons.go is
// named, as code, in README.md or docs/: a reason a person sees on a Guard
// is one they can look up.
func TestReasonsDocumented(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var docs strings.Builder
	for _, f := range append(files, filepath.Join("..", "..", "README.md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	reasons := reasonConstants(t)
	if len(reasons) < 30 {
		t.Fatalf("read %d reasons of reasons.go, want them all", len(reasons))
	}
	for name, value := range reasons {
		inCode := regexp.MustCompile("`[^`\n]*\\b" + regexp.QuoteMeta(value) + "\\b[^`\n]*`")
		if !inCode.MatchString(docs.String()) {
			t.Errorf("%s (%q) is not named in README.md or docs/", name, value)
		}
	}
}

// reasonConstants reads the Reason constants of reasons.go, name to value.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			lit, ok := spec.Values[i].(*ast.BasicLit)
			if !ok || !strings.HasPrefix(name.Name, "Reason") {
				continue
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			out[name.Name] = v
		}
		return true
	})
	return out
}
