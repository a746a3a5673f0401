package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
)

// maxDepth bounds the nesting of converted values so that a cyclic or absurdly
// deep object fails with an error instead of exhausting the stack.
const maxDepth = 256

// inputValue converts in to the AST value Rego sees as input, without a JSON
// round trip; object, oldObject and desired are converted lazily. The shape matches the JSON encoding of Input exactly (including
// omitempty fields and null for nil slices); TestInputValueMatchesJSON keeps
// the two in step.
func inputValue(in *Input) (ast.Value, error) {
	// The top level is a lazy object too: building an eager one would hash,
	// and so convert, the lazily converted objects inside it.
	top := make(map[string]any, 12)
	add := func(k string, v ast.Value) { top[k] = v }

	add("operation", ast.String(in.Operation))
	add("user", userValue(&in.User))
	add("resource", ast.NewObject(
		strItem("group", in.Resource.Group),
		strItem("version", in.Resource.Version),
		strItem("kind", in.Resource.Kind),
		strItem("namespace", in.Resource.Namespace),
		strItem("name", in.Resource.Name),
	))
	if in.SubResource != "" {
		add("subResource", ast.String(in.SubResource))
	}
	if err := addObjects(in, add); err != nil {
		return nil, err
	}
	d, err := driftValue(in.Drift)
	if err != nil {
		return nil, err
	}
	add("drift", d)
	add("added", stringsValue(in.Added))
	add("removed", stringsValue(in.Removed))
	if in.FieldManager != "" {
		add("fieldManager", ast.String(in.FieldManager))
	}
	add("source", ast.NewObject(
		strItem("url", in.Source.URL),
		strItem("revision", in.Source.Revision),
		strItem("path", in.Source.Path),
		[2]*ast.Term{ast.StringTerm("line"), ast.IntNumberTerm(in.Source.Line)},
	))
	if len(in.Annotations) > 0 {
		add("annotations", stringMapValue(in.Annotations))
	}
	add("dryRun", ast.Boolean(in.DryRun))
	add("guard", ast.String(in.Guard))
	if in.Orphan {
		add("orphan", ast.Boolean(true))
	}
	if len(in.PolicyData) > 0 {
		add("policyData", stringMapValue(in.PolicyData))
	}
	return ast.LazyObject(top), nil
}

// addObjects adds object, oldObject, desired and guardSpec when set:
// lazily converted when they can be, most policies reading a few fields of
// them if any.
func addObjects(in *Input, add func(k string, v ast.Value)) error {
	for _, f := range []struct {
		key string
		obj map[string]any
	}{{"object", in.Object}, {"oldObject", in.OldObject}, {"desired", in.Desired}, {"guardSpec", in.GuardSpec}} {
		if len(f.obj) == 0 {
			continue
		}
		// Most policies read a few fields of the objects, if any: convert them
		// lazily, on first access. Checking first keeps the lazy conversion,
		// which panics on a value it cannot convert, from failing later.
		lazyOK, err := checkValue(f.obj, 0)
		if err != nil {
			return fmt.Errorf("input.%s: %w", f.key, err)
		}
		if lazyOK {
			add(f.key, ast.LazyObject(f.obj))
			continue
		}
		v, err := toValue(f.obj, 0)
		if err != nil {
			return fmt.Errorf("input.%s: %w", f.key, err)
		}
		add(f.key, v)
	}
	return nil
}

// driftValue is input.drift: null without a comparison, else one object
// per changed field.
func driftValue(drift []Change) (ast.Value, error) {
	if drift == nil {
		return ast.NullValue, nil
	}
	terms := make([]*ast.Term, len(drift))
	for i := range drift {
		c := &drift[i]
		d, err := toValue(c.Desired, 0)
		if err != nil {
			return nil, fmt.Errorf("input.drift[%d].desired: %w", i, err)
		}
		l, err := toValue(c.Live, 0)
		if err != nil {
			return nil, fmt.Errorf("input.drift[%d].live: %w", i, err)
		}
		items := [][2]*ast.Term{
			strItem("path", c.Path),
			{ast.StringTerm("desired"), ast.NewTerm(d)},
			{ast.StringTerm("live"), ast.NewTerm(l)},
		}
		if c.Old != nil {
			o, err := toValue(c.Old, 0)
			if err != nil {
				return nil, fmt.Errorf("input.drift[%d].old: %w", i, err)
			}
			items = append(items, [2]*ast.Term{ast.StringTerm("old"), ast.NewTerm(o)})
		}
		terms[i] = ast.NewTerm(ast.NewObject(items...))
	}
	return ast.NewArray(terms...), nil
}

func strItem(k, v string) [2]*ast.Term {
	return [2]*ast.Term{ast.StringTerm(k), ast.StringTerm(v)}
}

func userValue(u *User) ast.Value {
	kvs := make([][2]*ast.Term, 0, 4)
	kvs = append(kvs, strItem("username", u.Username))
	if u.UID != "" {
		kvs = append(kvs, strItem("uid", u.UID))
	}
	kvs = append(kvs,
		[2]*ast.Term{ast.StringTerm("groups"), ast.NewTerm(stringsValue(u.Groups))},
		[2]*ast.Term{ast.StringTerm("serviceAccount"), ast.BooleanTerm(u.ServiceAccount)},
	)
	return ast.NewObject(kvs...)
}

func stringsValue(ss []string) ast.Value {
	if ss == nil {
		return ast.NullValue
	}
	terms := make([]*ast.Term, len(ss))
	for i, s := range ss {
		terms[i] = ast.StringTerm(s)
	}
	return ast.NewArray(terms...)
}

func stringMapValue(m map[string]string) ast.Value {
	kvs := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		kvs = append(kvs, strItem(k, v))
	}
	return ast.NewObject(kvs...)
}

// toValue converts the Go values that decoded JSON and Kubernetes unstructured
// objects are made of. Anything else goes through ast.InterfaceToValue, which
// falls back to a JSON round trip.
func toValue(x any, depth int) (ast.Value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	switch x := x.(type) {
	case nil:
		return ast.NullValue, nil
	case string:
		return ast.String(x), nil
	case bool:
		return ast.Boolean(x), nil
	case int:
		return ast.Number(strconv.Itoa(x)), nil
	case int32:
		return ast.Number(strconv.FormatInt(int64(x), 10)), nil
	case int64:
		return ast.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return ast.Number(strconv.FormatUint(x, 10)), nil
	case float32:
		return floatValue(float64(x))
	case float64:
		return floatValue(x)
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return nil, fmt.Errorf("invalid number %q", string(x))
		}
		return ast.Number(x), nil
	case map[string]any:
		kvs := make([][2]*ast.Term, 0, len(x))
		for k, v := range x {
			vv, err := toValue(v, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			kvs = append(kvs, [2]*ast.Term{ast.StringTerm(k), ast.NewTerm(vv)})
		}
		return ast.NewObject(kvs...), nil
	case []any:
		terms := make([]*ast.Term, len(x))
		for i, e := range x {
			v, err := toValue(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			terms[i] = ast.NewTerm(v)
		}
		return ast.NewArray(terms...), nil
	case []string:
		return stringsValue(x), nil
	case map[string]string:
		return stringMapValue(x), nil
	default:
		v, err := ast.InterfaceToValue(x)
		if err != nil {
			return nil, fmt.Errorf("convert %T: %w", x, err)
		}
		return v, nil
	}
}

func floatValue(f float64) (ast.Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("number %v is not representable in JSON", f)
	}
	return ast.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// checkValue reports an error where toValue would fail to convert x, and
// whether ast.InterfaceToValue (used by the lazy conversion) converts x the
// same way. It allocates nothing for the types decoded JSON is made of.
func checkValue(x any, depth int) (lazyOK bool, err error) {
	if depth > maxDepth {
		return false, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	switch x := x.(type) {
	case nil, string, bool, int, int32, int64, []string, map[string]string:
		return true, nil
	case uint64:
		// OPA v1.22 turns a uint64 above MaxInt64 into a negative number.
		return x <= math.MaxInt64, nil
	case float32:
		_, err := floatValue(float64(x))
		return err == nil, err
	case float64:
		_, err := floatValue(x)
		return err == nil, err
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return false, fmt.Errorf("invalid number %q", string(x))
		}
		return true, nil
	case map[string]any:
		lazyOK = true
		for k, v := range x {
			ok, err := checkValue(v, depth+1)
			if err != nil {
				return false, fmt.Errorf("%s: %w", k, err)
			}
			lazyOK = lazyOK && ok
		}
		return lazyOK, nil
	case []any:
		lazyOK = true
		for i, e := range x {
			ok, err := checkValue(e, depth+1)
			if err != nil {
				return false, fmt.Errorf("[%d]: %w", i, err)
			}
			lazyOK = lazyOK && ok
		}
		return lazyOK, nil
	default:
		if _, err := toValue(x, depth); err != nil {
			return false, err
		}
		return false, nil
	}
}
