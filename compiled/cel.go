package compiled

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/driftguard/driftguard/drift"
)

// topLevel are the fields no comparison looks at: status belongs to
// controllers, metadata is compared part by part below.
var topLevel = []string{"apiVersion", "kind", "metadata", "status"}

// unchanged is a CEL expression, true when an UPDATE's new object differs
// from the old one in nothing the shape does not hide, nothing outside
// status and the metadata the server owns, and none of the annotations the
// guard ignores (its own, last-applied): what drift.Edits counts as a
// change, in the API server.
func unchanged(s Shape) string {
	t := newTrie(s.Paths)
	var parts []string
	skip := append([]string{}, topLevel...)
	for _, k := range t.keys() {
		if !slices.Contains(topLevel, k) {
			skip = append(skip, k)
		}
	}
	parts = append(parts,
		fmt.Sprintf("object.all(k, k in %s || (k in oldObject && object[k] == oldObject[k]))", list(skip)),
		fmt.Sprintf("oldObject.all(k, k in %s || k in object)", list(skip)))
	for _, k := range t.keys() {
		c := t.children[k]
		if slices.Contains(topLevel, k) || c.end {
			continue
		}
		parts = append(parts, present(lit(k), "object", "oldObject", eq("object["+lit(k)+"]", "oldObject["+lit(k)+"]", c)))
	}
	if md := t.child("metadata"); md == nil || !md.end {
		parts = append(parts, metadataUnchanged(md)...)
	}
	return strings.Join(parts, " && ")
}

// present compares a key's presence in two maps and, where present, the
// values by cmp.
func present(key, a, b, cmp string) string {
	return fmt.Sprintf("(%s in %s) == (%s in %s) && (!(%s in %s) || %s)", key, a, key, b, key, a, cmp)
}

// eq compares two values present in both objects, leaving out what n hides.
func eq(a, b string, n *trie) string {
	if n == nil || len(n.children) == 0 {
		if n != nil && n.end {
			return "true"
		}
		return a + " == " + b
	}
	keys := n.keys()
	parts := []string{
		fmt.Sprintf("%s.all(k, k in %s || (k in %s && %s[k] == %s[k]))", a, list(keys), b, a, b),
		fmt.Sprintf("%s.all(k, k in %s || k in %s)", b, list(keys), a),
	}
	for _, k := range keys {
		c := n.children[k]
		if c.end {
			continue
		}
		parts = append(parts, present(lit(k), a, b, eq(a+"["+lit(k)+"]", b+"["+lit(k)+"]", c)))
	}
	return fmt.Sprintf("(type(%s) == map && type(%s) == map ? (%s) : %s == %s)", a, b, strings.Join(parts, " && "), a, b)
}

// metadataUnchanged compares labels, annotations (but the guard's own and
// last-applied), owner references and finalizers; md hides parts of them:
// a label or annotation a path ends at (a path below one, into a string,
// hides nothing, as in drift.Edits).
func metadataUnchanged(md *trie) []string {
	var parts []string
	if l := md.child("labels"); l == nil || !l.end {
		if hidden := l.ends(); len(hidden) > 0 {
			parts = append(parts, mapEq("variables.newLabels", "variables.oldLabels", "k in "+list(hidden)))
		} else {
			parts = append(parts, "variables.newLabels == variables.oldLabels")
		}
	}
	if a := md.child("annotations"); a == nil || !a.end {
		cond := fmt.Sprintf("k.startsWith(%s) || k == %s", lit(drift.OwnAnnotationPrefix), lit(corev1.LastAppliedConfigAnnotation))
		if hidden := a.ends(); len(hidden) > 0 {
			cond += " || k in " + list(hidden)
		}
		parts = append(parts, mapEq("variables.newAnnotations", "variables.oldAnnotations", cond))
	}
	for _, f := range []string{"ownerReferences", "finalizers"} {
		if c := md.child(f); c == nil || !c.end {
			parts = append(parts, fmt.Sprintf("object.metadata.?%s.orValue([]) == oldObject.metadata.?%s.orValue([])", f, f))
		}
	}
	return parts
}

// mapEq compares two maps of strings but for the keys cond (of k) names.
// Equal maps (most updates leave labels and annotations as they were) are
// told by one comparison, without a comprehension over their keys.
func mapEq(a, b, cond string) string {
	return fmt.Sprintf("(%s == %s || %s.all(k, %s || (k in %s && %s[k] == %s[k])) && %s.all(k, %s || k in %s))", a, b, a, cond, b, a, b, b, cond, a)
}

// scaleUnchanged is the same for a write of the scale subresource.
func scaleUnchanged(s Shape) string {
	t := newTrie(s.Paths)
	if spec := t.child("spec"); spec != nil && (spec.end || (spec.child("replicas") != nil && spec.child("replicas").end)) {
		return "true"
	}
	return "object.?spec.?replicas.orValue(0) == oldObject.?spec.?replicas.orValue(0)"
}

// byShape selects, by the index's shape of the object, the expression of
// that shape; an unknown shape (an index written before its policy) gets
// the empty shape's.
func byShape(shapes []Shape, expr func(Shape) string) string {
	def := expr(Shape{})
	out := def
	for i := len(shapes) - 1; i >= 0; i-- {
		s := shapes[i]
		// A shape whose expression is the empty shape's needs no branch
		// (most shapes defer no writer: deferred is false for all).
		if s.ID() == "" || expr(s) == def {
			continue
		}
		out = fmt.Sprintf("(variables.shape == %s ? (%s) : %s)", lit(s.ID()), expr(s), out)
	}
	return out
}

// deferred names the writers a shape leaves to the webhook: the users of
// managedFieldsManagers rules, whose updates the webhook decides by the
// fields their managers own, which only the live managedFields tell.
func deferred(s Shape) string {
	if len(s.Defer) == 0 {
		return "false"
	}
	return `request.operation == "UPDATE" && request.userInfo.username in ` + list(s.Defer)
}
