package drift

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// RuleSpec is the input form of an ignore rule. Its fields are those of
// v1alpha1.IgnoreRule, so a caller converts one with RuleSpec(rule); drift
// does not import the API package.
type RuleSpec struct {
	// Group, Kind, Namespace and Name select the objects the rule applies to;
	// an empty field matches any value.
	Group     string
	Kind      string
	Namespace string
	Name      string
	// JSONPointers (RFC 6901) into the desired object; each hides that field
	// and everything below it. List elements are addressed by their index in
	// the desired list.
	JSONPointers []string
	// JQPathExpressions are evaluated against the desired object with path()
	// semantics; every path they yield is hidden.
	JQPathExpressions []string
	// ManagedFieldsManagers hide the fields these field managers own in the
	// live object's metadata.managedFields.
	ManagedFieldsManagers []string
	// Users are the authenticated identities that may write the fields of
	// ManagedFieldsManagers at admission (ForWrite).
	Users []string
}

// Rule is a compiled ignore rule. A Rule is immutable and safe for
// concurrent use.
type Rule struct {
	index                        int
	group, kind, namespace, name string
	pointers                     *pathTrie // nil when the rule has none
	jq                           []*jqExpr
	managers                     []string
	users                        []string
}

// CompileRules compiles ignore rules once, for use with For. A rule that does
// not parse is an error naming the rule's index, the field and the bad
// expression, for example
//
//	ignore[1].jqPathExpressions[0] ".spec[": unexpected EOF
//
// Every bad expression is reported, joined with errors.Join.
func CompileRules(specs []RuleSpec) ([]*Rule, error) {
	rules := make([]*Rule, 0, len(specs))
	var errs []error
	for i, s := range specs {
		r, err := compileRule(i, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rules = append(rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rules, nil
}

func compileRule(i int, s RuleSpec) (*Rule, error) {
	r := &Rule{index: i, group: s.Group, kind: s.Kind, namespace: s.Namespace, name: s.Name, users: s.Users}
	var errs []error
	for j, p := range s.JSONPointers {
		tokens, err := ParsePointer(p)
		if err == nil && p == "" {
			err = errors.New("empty pointer would hide the whole object")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("ignore[%d].jsonPointers[%d] %q: %w", i, j, p, err))
			continue
		}
		if r.pointers == nil {
			r.pointers = &pathTrie{}
		}
		r.pointers.add(tokens)
	}
	for j, src := range s.JQPathExpressions {
		e, err := compileJQ(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("ignore[%d].jqPathExpressions[%d] %q: %w", i, j, src, err))
			continue
		}
		e.field = fmt.Sprintf("ignore[%d].jqPathExpressions[%d]", i, j)
		r.jq = append(r.jq, e)
	}
	for j, m := range s.ManagedFieldsManagers {
		if strings.TrimSpace(m) == "" {
			errs = append(errs, fmt.Errorf("ignore[%d].managedFieldsManagers[%d] %q: empty manager name", i, j, m))
			continue
		}
		r.managers = append(r.managers, m)
	}
	if len(s.Users) > 0 && len(s.ManagedFieldsManagers) == 0 {
		errs = append(errs, fmt.Errorf("ignore[%d].users: names the writers of managedFieldsManagers, and the rule has none", i))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(s.JSONPointers)+len(s.JQPathExpressions)+len(s.ManagedFieldsManagers) == 0 {
		return nil, fmt.Errorf("ignore[%d]: selects no fields: set jsonPointers, jqPathExpressions or managedFieldsManagers", i)
	}
	return r, nil
}

// String names the rule by its index in the list it was compiled from.
func (r *Rule) String() string { return fmt.Sprintf("ignore[%d]", r.index) }

// Matches reports whether the rule applies to the object; empty match fields
// match anything.
func (r *Rule) Matches(group, kind, namespace, name string) bool {
	return (r.group == "" || r.group == group) &&
		(r.kind == "" || r.kind == kind) &&
		(r.namespace == "" || r.namespace == namespace) &&
		(r.name == "" || r.name == name)
}

// Check evaluates the rule's jq path expressions against a desired object and
// returns their runtime errors (for example iterating over a missing list).
// An expression that fails hides nothing; Check is how that becomes visible.
// It does not check whether the rule matches the object.
func (r *Rule) Check(desired map[string]any) error {
	var errs []error
	for _, e := range r.jq {
		if _, err := e.paths(desired); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Check runs Rule.Check for the rules that match the object.
func Check(rules []*Rule, group, kind, namespace, name string, desired map[string]any) error {
	var errs []error
	for _, r := range rules {
		if r.Matches(group, kind, namespace, name) {
			if err := r.Check(desired); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// For returns the Options that hide, from a comparison of one object, the
// fields the matching rules select. live is the object in the cluster; its
// metadata.managedFields decide what managedFieldsManagers rules hide. When no
// rule matches it returns the zero Options, which costs nothing in Compare.
// Rules from several sources (a Guard's, cluster-wide ones) are passed as one
// slice.
//
// jq path expressions are evaluated against the desired object when Compare
// runs; the desired object must not be modified afterwards.
func For(rules []*Rule, group, kind, namespace, name string, live map[string]any) Options {
	return forObject(rules, group, kind, namespace, name, live, func(*Rule) bool { return true })
}

// ForWrite returns the Options for deciding one write by user (at
// admission): updated is the object the write would store. A field manager's
// name is the writer's choice, so a managedFieldsManagers rule hides the
// fields its managers own only when user is one of the rule's Users; its
// jsonPointers and jqPathExpressions hide their fields from every writer.
func ForWrite(rules []*Rule, group, kind, namespace, name string, updated map[string]any, user string) Options {
	return forObject(rules, group, kind, namespace, name, updated, func(r *Rule) bool { return slices.Contains(r.users, user) })
}

func forObject(rules []*Rule, group, kind, namespace, name string, live map[string]any, trustManagers func(*Rule) bool) Options {
	var o *objectRules
	var managers []string
	for _, r := range rules {
		if !r.Matches(group, kind, namespace, name) {
			continue
		}
		if o == nil {
			o = &objectRules{}
		}
		if r.pointers != nil {
			o.pointers = append(o.pointers, r.pointers)
		}
		o.jq = append(o.jq, r.jq...)
		if trustManagers(r) {
			managers = append(managers, r.managers...)
		}
	}
	if o == nil {
		return Options{}
	}
	if len(managers) > 0 {
		o.managed = ownedFields(live, managers)
	}
	if len(o.pointers) == 0 && len(o.jq) == 0 && o.managed == nil {
		return Options{}
	}
	o.managers = managers
	return Options{rules: o}
}

// objectRules are the parts of the matching rules for one object.
type objectRules struct {
	pointers []*pathTrie
	jq       []*jqExpr
	managed  *fieldsNode
	// managers are the managedFieldsManagers in force: their fields are
	// never additions either.
	managers []string
}

// prepare evaluates what depends on the desired object (jq paths) once per
// comparison.
func (o *objectRules) prepare(desired map[string]any, secret bool) hider {
	h := hider{active: true, pointers: o.pointers, managed: o.managed, root: desired, secret: secret}
	for _, e := range o.jq {
		paths, err := e.paths(desired)
		if err != nil {
			// No match; Rule.Check reports the error.
			continue
		}
		for _, p := range paths {
			if h.jq == nil {
				h.jq = &pathTrie{}
			}
			h.jq.add(p)
		}
	}
	return h
}

// hider answers, for one comparison, whether a field is hidden.
type hider struct {
	active   bool
	pointers []*pathTrie
	jq       *pathTrie
	managed  *fieldsNode
	root     map[string]any
	secret   bool
}

func (h *hider) hidden(tokens []string) bool {
	for _, t := range h.pointers {
		if t.covers(tokens, h.secret) {
			return true
		}
	}
	if h.jq.covers(tokens, h.secret) {
		return true
	}
	return h.managed != nil && h.managed.owns(h.root, tokens)
}

// pathTrie is a set of paths; a path covers itself and everything below it.
type pathTrie struct {
	end      bool
	children map[string]*pathTrie
}

func (t *pathTrie) add(tokens []string) {
	n := t
	for _, tok := range tokens {
		if n.end {
			return // an ancestor is already hidden whole
		}
		if n.children == nil {
			n.children = map[string]*pathTrie{}
		}
		c, ok := n.children[tok]
		if !ok {
			c = &pathTrie{}
			n.children[tok] = c
		}
		n = c
	}
	n.end, n.children = true, nil
}

// covers reports whether the set holds tokens or one of its prefixes. For a
// Secret, whose stringData Compare folds into data, a path under /stringData
// also covers the same key under /data.
func (t *pathTrie) covers(tokens []string, secret bool) bool {
	if t == nil {
		return false
	}
	if t.walk(tokens) {
		return true
	}
	if secret && len(tokens) > 0 && tokens[0] == "data" {
		if sd := t.children["stringData"]; sd != nil {
			return sd.walk(tokens[1:])
		}
	}
	return false
}

func (t *pathTrie) walk(tokens []string) bool {
	n := t
	for _, tok := range tokens {
		if n.end {
			return true
		}
		n = n.children[tok]
		if n == nil {
			return false
		}
	}
	return n.end
}

// ParsePointer splits an RFC 6901 JSON pointer into unescaped reference
// tokens; "" is the whole document (no tokens).
func ParsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, errors.New(`a JSON pointer starts with "/"`)
	}
	parts := strings.Split(p[1:], "/")
	for i, part := range parts {
		if !strings.Contains(part, "~") {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(part); j++ {
			if part[j] != '~' {
				b.WriteByte(part[j])
				continue
			}
			if j+1 == len(part) || (part[j+1] != '0' && part[j+1] != '1') {
				return nil, fmt.Errorf("invalid escape in %q: ~ must be followed by 0 or 1", part)
			}
			if part[j+1] == '0' {
				b.WriteByte('~')
			} else {
				b.WriteByte('/')
			}
			j++
		}
		parts[i] = b.String()
	}
	return parts, nil
}

// RuleErrors splits the errors CompileRules and Check join into one error a
// rule, for printing a line each.
func RuleErrors(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, RuleErrors(e)...)
	}
	return out
}
