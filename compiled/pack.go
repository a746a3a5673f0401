package compiled

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// The index ConfigMaps hold objects' entries packed in buckets, not one key
// per object: the API server converts the whole parameter ConfigMap into
// CEL values on every request a policy matches, at about a microsecond per
// key, so one key per object made every update of a managed object cost
// time in proportion to the objects of its namespace (+3.9 ms of API
// server CPU at 2,000; docs/performance.md). A bucket is the objects of one
// resource whose names end in one character; its value is
// "\n<name>=<entry>" for each, and a final "\n". The policies find an entry
// with two indexOf calls over one bucket.

// bucketKey is the index key of the bucket of an object: head is the
// resource.group part of its Key.
func bucketKey(head, name string) string {
	return head + "_" + bucketChar(name)
}

// bucketChar is the last character of name when it may be part of a
// ConfigMap key, "_" otherwise; the policies compute the same (bucketExpr).
func bucketChar(name string) string {
	r, _ := utf8.DecodeLastRuneInString(name)
	if r < utf8.RuneSelf && (r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
		return string(r)
	}
	return "_"
}

// RequestName is, in CEL, the name of the object an admission request
// writes. A delete of a collection (kubectl delete --all, a DELETE of a
// list URL) reaches admission once per object with request.name empty and
// the object in oldObject (k8s.io/apiserver's
// AdmissionToValidateObjectDeleteFunc). request.name is then absent, not
// empty (the request's JSON omits an empty name): read alone, it fails
// the expression.
const RequestName = `(has(request.name) ? request.name : oldObject != null ? oldObject.metadata.name : "")`

// bucketExpr is bucketChar in CEL, of the request's object's name.
var bucketExpr = strings.ReplaceAll(`(size(request.name) == 0 ? "_" : request.name.substring(size(request.name) - 1).matches("^[A-Za-z0-9.-]$") ? request.name.substring(size(request.name) - 1) : "_")`, "request.name", RequestName)

// packable reports whether an object's name can be held in a bucket: no
// separator of the packed form ("\n", "="), nothing a name of a built-in
// kind never holds. Other objects are left to the webhook.
func packable(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

// nameByte reports whether c is a letter, a digit or one of . - _ : @ +.
func nameByte(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	return strings.IndexByte(".-_:@+", c) >= 0
}

// PackEntries is the data of an index ConfigMap holding entries (object
// entries by Key, the others as they are).
func PackEntries(entries map[string]string) map[string]string {
	out := map[string]string{}
	buckets := map[string][]string{}
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		head, name, ok := strings.Cut(k, "_")
		if !ok {
			out[k] = entries[k]
			continue
		}
		b := bucketKey(head, name)
		buckets[b] = append(buckets[b], "\n"+name+"="+entries[k])
	}
	for b, lines := range buckets {
		out[b] = strings.Join(lines, "") + "\n"
	}
	return out
}

// Entries reads the entries an index ConfigMap's data holds (the inverse of
// PackEntries); a malformed bucket line is skipped.
func Entries(data map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		head, _, ok := strings.Cut(k, "_")
		if !ok {
			out[k] = v
			continue
		}
		for line := range strings.SplitSeq(v, "\n") {
			name, entry, ok := strings.Cut(line, "=")
			if ok && packable(name) && bucketKey(head, name) == k {
				out[head+"_"+name] = entry
			}
		}
	}
	return out
}
