package render

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/jsonvalue"
)

// SubstituteAnnotation set to "disabled" on an object in Git leaves its
// ${...} alone.
const SubstituteAnnotation = "driftguard.io/substitute"

var varNameRE = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

// CheckVarName reports whether name can be a substitution variable: a
// letter or underscore, then letters, digits and underscores.
func CheckVarName(name string) error {
	if !varNameRE.MatchString(name) {
		return fmt.Errorf("variable name %q is invalid: use letters, digits and underscores, not starting with a digit", name)
	}
	return nil
}

// substituteAll replaces ${VAR} in every object, as Flux's postBuild
// substitution does: on the object's YAML text, so that an unquoted
// ${REPLICAS} becomes a number. Objects whose substitution fails are
// dropped and the problem recorded.
func (r *renderer) substituteAll(objs []*Object) []*Object {
	out := objs[:0]
	for _, o := range objs {
		if err := r.substitute(o); err != nil {
			r.fail(&RenderError{Path: o.Source.Path, Line: o.Source.Line, Err: fmt.Errorf("%s: %w", o.Key.Display(), err)})
			continue
		}
		out = append(out, o)
	}
	return out
}

func (r *renderer) substitute(o *Object) error {
	if o.Obj().GetAnnotations()[SubstituteAnnotation] == "disabled" {
		return nil
	}
	text, err := yaml.Marshal(o.Obj().Object)
	if err != nil {
		return fmt.Errorf("substitute variables: %w", err)
	}
	if !strings.Contains(string(text), "$") {
		return nil
	}
	tree, err := parse.Parse(string(text))
	if err != nil {
		return fmt.Errorf("substitute variables: %w", err)
	}
	if missing := r.missingVars(tree.Root, nil); len(missing) > 0 {
		for i, m := range missing {
			missing[i] = fmt.Sprintf("%q", m)
		}
		if len(missing) == 1 {
			return fmt.Errorf("variable %s is not set and has no default", missing[0])
		}
		return fmt.Errorf("variables %s are not set and have no default", strings.Join(missing, ", "))
	}
	// A variable named many times is written as many times, and a global
	// replacement multiplies: the object's text after substitution is
	// bounded before it is made.
	if size := r.substitutedSize(tree.Root); size > r.lim.MaxDecodedBytes {
		return fmt.Errorf("substitute variables: %w", decodedError(r.lim.MaxDecodedBytes))
	}
	done, err := envsubst.Eval(string(text), func(name string) (string, bool) {
		v, ok := r.opts.Vars[name]
		return v, ok
	})
	if err != nil {
		return fmt.Errorf("substitute variables: %w", err)
	}
	if done == string(text) {
		return nil
	}
	docs, err := decodeYAML([]byte(done), r.lim)
	if err != nil {
		return fmt.Errorf("after substituting variables the object is not valid YAML (quote values that hold YAML syntax): %w", err)
	}
	if len(docs) != 1 {
		return fmt.Errorf("after substituting variables the object is %d documents", len(docs))
	}
	m, ok := docs[0].value.(map[string]any)
	if !ok {
		return fmt.Errorf("after substituting variables the object is a %s", jsonvalue.Name(docs[0].value))
	}
	if err := validate(m); err != nil {
		return fmt.Errorf("after substituting variables: %w", err)
	}
	o.SetObj(&unstructured.Unstructured{Object: m})
	return nil
}

// substitutedSize bounds the bytes n substitutes to (each value once per
// reference, a default or replacement counted whole), and what its
// arguments take on the way. A global replacement puts its replacement
// at every match, and an empty pattern matches around every character
// (${V//${V:0:0}/R} is V with R between its characters): nested, that
// multiplies, so its bound is the value's length plus one, times the
// replacement's. The sum saturates.
func (r *renderer) substitutedSize(n parse.Node) int64 {
	switch n := n.(type) {
	case *parse.TextNode:
		return int64(len(n.Value))
	case *parse.ListNode:
		var size int64
		for _, c := range n.Nodes {
			size = addSat(size, r.substitutedSize(c))
		}
		return size
	case *parse.FuncNode:
		value := int64(len(r.opts.Vars[n.Param]))
		size := value
		args := make([]int64, len(n.Args))
		for i, c := range n.Args {
			args[i] = r.substitutedSize(c)
			size = addSat(size, args[i])
		}
		if n.Name == "//" && len(args) == 2 {
			size = addSat(size, mulSat(value+1, args[1]))
		}
		return size
	}
	return 0
}

func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// missingVars returns, sorted and once each, the variables n reads that
// are unset, leaving out those whose operator supplies a default.
func (r *renderer) missingVars(n parse.Node, acc []string) []string {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			acc = r.missingVars(c, acc)
		}
	case *parse.FuncNode:
		for _, c := range n.Args {
			acc = r.missingVars(c, acc)
		}
		if _, set := r.opts.Vars[n.Param]; !set && !defaultOperator(n.Name) && !slices.Contains(acc, n.Param) {
			acc = append(acc, n.Param)
		}
	}
	slices.Sort(acc)
	return acc
}

// defaultOperator reports whether a ${VAR<op>...} operator supplies its
// own value when VAR is unset (as envsubst's strict mode treats them).
func defaultOperator(op string) bool {
	switch op {
	case "-", "=", ":-", ":=", "+", ":+", "?", ":?":
		return true
	}
	return false
}
