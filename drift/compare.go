package drift

import (
	"encoding/base64"
	"maps"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Options tune a comparison.
type Options struct {
	// Ignore, when set, is asked for each desired field path (reference tokens);
	// a true answer skips the field and everything below it.
	Ignore func(tokens []string) bool

	// rules are the ignore rules For selected for one object; nil when none
	// match, so the zero Options costs nothing.
	rules *objectRules
}

// serverSetMetadata are metadata fields whose Git value, if any, is never
// compared: those only the API server sets, and the owner references and
// finalizers controllers set (what a writer adds to them is an addition).
var serverSetMetadata = func() map[string]bool {
	m := maps.Clone(serverOwnedMetadata)
	m["ownerReferences"], m["finalizers"] = true, true
	return m
}()

// ignoredAnnotations are annotations that carry bookkeeping, not intent.
var ignoredAnnotations = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// OwnAnnotationPrefix marks annotations the guard itself writes (for example the
// changed-by stamp); they are never drift.
const OwnAnnotationPrefix = "driftguard.io/"

// Compare returns the fields Git sets whose live value differs. An empty
// result means in sync. Secret values are redacted in the result.
func Compare(desired, live map[string]any, opts Options) []Change {
	c := comparer{opts: opts, tokens: make([]string, 0, 16)}
	if isSecret(desired) {
		desired = secretWithStringDataMerged(desired)
		live = secretWithStringDataMerged(live)
		c.secret = true
	}
	if opts.rules != nil {
		c.hide = opts.rules.prepare(desired, c.secret)
	}
	c.object(desired, live)
	if len(c.changes) > 1 {
		// Map order is random; a stable order keeps messages and records diffable.
		sort.Slice(c.changes, func(i, j int) bool { return c.changes[i].Path < c.changes[j].Path })
	}
	return c.changes
}

// InSync reports whether Compare finds no change.
func InSync(desired, live map[string]any, opts Options) bool {
	return len(Compare(desired, live, opts)) == 0
}

type comparer struct {
	opts    Options
	tokens  []string
	changes []Change
	secret  bool
	// hide holds the fields ignore rules hide from this comparison; its
	// zero value hides nothing.
	hide hider
}

// ignored reports whether the field at c.tokens, and everything below it, is
// left out of the comparison.
func (c *comparer) ignored() bool {
	if c.opts.Ignore != nil && c.opts.Ignore(c.tokens) {
		return true
	}
	return c.hide.active && c.hide.hidden(c.tokens)
}

func (c *comparer) object(desired, live map[string]any) {
	for k, dv := range desired {
		switch k {
		case "status", "apiVersion", "kind":
			// status is the server's; apiVersion may differ by conversion;
			// kind is part of the identity already.
			continue
		case "metadata":
			dm, _ := dv.(map[string]any)
			lm, _ := live["metadata"].(map[string]any)
			c.metadata(dm, lm)
			continue
		}
		c.push(k)
		lv, ok := live[k]
		c.value(dv, lv, ok)
		c.pop()
	}
}

func (c *comparer) metadata(desired, live map[string]any) {
	c.push("metadata")
	defer c.pop()
	if c.ignored() {
		return
	}
	for k, dv := range desired {
		if serverSetMetadata[k] {
			continue
		}
		lv, ok := live[k]
		if k == "annotations" {
			c.push(k)
			if !c.ignored() {
				c.annotations(dv, lv)
			}
			c.pop()
			continue
		}
		c.push(k)
		c.value(dv, lv, ok)
		c.pop()
	}
}

func (c *comparer) annotations(desired, live any) {
	dm, _ := desired.(map[string]any)
	lm, _ := live.(map[string]any)
	for k, dv := range dm {
		if ignoredAnnotations[k] || hasOwnPrefix(k) {
			continue
		}
		lv, ok := lm[k]
		c.push(k)
		c.value(dv, lv, ok)
		c.pop()
	}
}

func hasOwnPrefix(k string) bool {
	return len(k) >= len(OwnAnnotationPrefix) && k[:len(OwnAnnotationPrefix)] == OwnAnnotationPrefix
}

func (c *comparer) push(t string) { c.tokens = append(c.tokens, t) }
func (c *comparer) pop()          { c.tokens = c.tokens[:len(c.tokens)-1] }

func (c *comparer) value(desired, live any, present bool) {
	if desired == nil {
		// An explicit null in Git expresses no opinion about the field.
		return
	}
	if c.ignored() {
		return
	}
	if !present || live == nil {
		// Git sets the field and the cluster lacks it. Where the API server
		// itself drops Git's value (the empty values of omitempty fields:
		// "hostNetwork: false", "annotations: {}"), the server values of
		// the object's last apply or dry run say so and filter it out; a
		// writer who removed "allowPrivilegeEscalation: false" is drift.
		c.record(desired, nil, true)
		return
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			c.record(desired, live, false)
			return
		}
		for k, dv := range d {
			lv, ok := l[k]
			c.push(k)
			c.value(dv, lv, ok)
			c.pop()
		}
	case []any:
		l, ok := live.([]any)
		if !ok {
			c.record(desired, live, false)
			return
		}
		c.list(d, l)
	default:
		if !scalarEqual(desired, live) {
			c.record(desired, live, false)
		}
	}
}

// list compares a list Git sets. Lists of objects that all carry a name are
// matched by name, as the API server merges them (containers, env, volumes,
// ports); elements others added are not drift. Any other list is atomic: it
// must have the same length, and each element is compared in place.
func (c *comparer) list(desired, live []any) {
	if keyed := namesOf(desired); keyed != nil {
		liveByName := make(map[string]map[string]any, len(live))
		for _, lv := range live {
			if m, ok := lv.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					liveByName[n] = m
				}
			}
		}
		for i, dv := range desired {
			c.push(strconv.Itoa(i))
			lm, ok := liveByName[keyed[i]]
			// A missing element goes through value too, so ignore rules
			// can hide it.
			c.value(dv, lm, ok)
			c.pop()
		}
		return
	}
	if len(desired) != len(live) {
		c.record(desired, live, false)
		return
	}
	for i := range desired {
		c.push(strconv.Itoa(i))
		c.value(desired[i], live[i], true)
		c.pop()
	}
}

// namesOf returns the name of each element when every element is an object
// with a string name, else nil.
func namesOf(list []any) []string {
	if len(list) == 0 {
		return nil
	}
	names := make([]string, len(list))
	for i, v := range list {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		n, ok := m["name"].(string)
		if !ok {
			return nil
		}
		names[i] = n
	}
	return names
}

func (c *comparer) record(desired, live any, missing bool) {
	if c.secret && len(c.tokens) >= 2 && (c.tokens[0] == "data" || c.tokens[0] == "stringData") {
		desired, live = RedactValue(desired), redactPresent(live)
	} else if c.secret && len(c.tokens) == 1 && (c.tokens[0] == "data" || c.tokens[0] == "stringData") {
		desired, live = RedactMap(desired), RedactMap(live)
	}
	c.changes = append(c.changes, Change{Path: pointer(c.tokens), Desired: desired, Live: live, Missing: missing})
}

func redactPresent(v any) any {
	if v == nil {
		return nil
	}
	return RedactValue(v)
}

// scalarEqual compares two scalars as the API server would store them: numbers
// by value whatever their Go type, and resource quantities by amount
// ("1000m" equals "1", 1 equals "1").
func scalarEqual(desired, live any) bool {
	if desired == live {
		return true
	}
	df, dnum := number(desired)
	lf, lnum := number(live)
	if dnum && lnum {
		return df == lf
	}
	ds, dstr := desired.(string)
	ls, lstr := live.(string)
	switch {
	case dstr && lstr:
		return quantityEqual(ds, ls)
	case dnum && lstr:
		return quantityEqual(strconv.FormatFloat(df, 'f', -1, 64), ls)
	case dstr && lnum:
		return quantityEqual(ds, strconv.FormatFloat(lf, 'f', -1, 64))
	}
	return false
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

func quantityEqual(a, b string) bool {
	if a == "" || b == "" || !startsLikeNumber(a) || !startsLikeNumber(b) {
		return false
	}
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	if err != nil {
		return false
	}
	return qa.Cmp(qb) == 0
}

func startsLikeNumber(s string) bool {
	ch := s[0]
	return (ch >= '0' && ch <= '9') || ch == '.' || ch == '+' || ch == '-'
}

func isSecret(obj map[string]any) bool {
	k, _ := obj["kind"].(string)
	v, _ := obj["apiVersion"].(string)
	return k == "Secret" && v == "v1"
}

// secretWithStringDataMerged folds stringData into data the way the API
// server does, so Git's stringData compares with the stored data.
func secretWithStringDataMerged(obj map[string]any) map[string]any {
	sd, ok := obj["stringData"].(map[string]any)
	if !ok || len(sd) == 0 {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	delete(out, "stringData")
	data := map[string]any{}
	if d, ok := obj["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	out["data"] = data
	return out
}
