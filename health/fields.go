package health

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/driftguard/driftguard/jsonvalue"
)

// fields reads an unstructured object leniently about how numbers are held
// (int64 from the API machinery, float64 or json.Number from a plain JSON
// decode, int from YAML) and strictly about types: the first field of the
// wrong type is remembered in err, so that the assessment can say which field
// it could not read instead of guessing.
type fields struct {
	obj map[string]any
	err error
}

// get returns the value at path; absent and null are the same.
func (f *fields) get(path ...string) (any, bool) {
	var cur any = f.obj
	for i, key := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			f.wrongType(path[:i], cur, "an object")
			return nil, false
		}
		cur, ok = m[key]
		if !ok || cur == nil {
			return nil, false
		}
	}
	return cur, true
}

func (f *fields) wrongType(path []string, v any, want string) {
	if f.err == nil {
		f.err = fmt.Errorf("%s is %s, want %s", strings.Join(path, "."), jsonvalue.Kind(v), want)
	}
}

// int returns the integer at path, and whether it is set.
func (f *fields) int(path ...string) (int64, bool) {
	v, ok := f.get(path...)
	if !ok {
		return 0, false
	}
	if n, ok := toInt(v); ok {
		return n, true
	}
	f.wrongType(path, v, "an integer")
	return 0, false
}

// intOr returns the integer at path, or def when it is not set.
func (f *fields) intOr(def int64, path ...string) int64 {
	if n, ok := f.int(path...); ok {
		return n
	}
	return def
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), true
		}
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, true
		}
	}
	return 0, false
}

// str returns the string at path, "" when it is not set.
func (f *fields) str(path ...string) string {
	v, ok := f.get(path...)
	if !ok {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		f.wrongType(path, v, "a string")
	}
	return s
}

// boolean returns the boolean at path, false when it is not set.
func (f *fields) boolean(path ...string) bool {
	v, ok := f.get(path...)
	if !ok {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		f.wrongType(path, v, "a boolean")
	}
	return b
}

// list returns the array at path, nil when it is not set.
func (f *fields) list(path ...string) []any {
	v, ok := f.get(path...)
	if !ok {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		f.wrongType(path, v, "an array")
	}
	return l
}

// object returns the map at path, nil when it is not set.
func (f *fields) object(path ...string) map[string]any {
	v, ok := f.get(path...)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		f.wrongType(path, v, "an object")
	}
	return m
}

// objects returns the elements of the array at path, each an object; an
// element that is not one is a type error.
func (f *fields) objects(path ...string) []map[string]any {
	l := f.list(path...)
	out := make([]map[string]any, 0, len(l))
	for i, e := range l {
		m, ok := e.(map[string]any)
		if !ok {
			f.wrongType(indexed(path, i), e, "an object")
			continue
		}
		out = append(out, m)
	}
	return out
}

// indexed returns path with "[i]" appended to its last element.
func indexed(path []string, i int) []string {
	out := append([]string(nil), path...)
	out[len(out)-1] += fmt.Sprintf("[%d]", i)
	return out
}

// sub returns a reader of m that reports errors under prefix and into f.
func (f *fields) sub(m map[string]any, prefix ...string) *subFields {
	return &subFields{parent: f, inner: fields{obj: m}, prefix: prefix}
}

// subFields reads one element of an array (a condition, a container
// status), reporting type errors with the element's full path.
type subFields struct {
	parent *fields
	inner  fields
	prefix []string
}

func (s *subFields) done() {
	if s.inner.err != nil && s.parent.err == nil {
		s.parent.err = fmt.Errorf("%s.%w", strings.Join(s.prefix, "."), s.inner.err)
	}
	s.inner.err = nil
}

func (s *subFields) str(path ...string) string {
	defer s.done()
	return s.inner.str(path...)
}

func (s *subFields) boolean(path ...string) bool {
	defer s.done()
	return s.inner.boolean(path...)
}

func (s *subFields) has(path ...string) bool {
	_, ok := s.inner.get(path...)
	s.done()
	return ok
}

func (s *subFields) intOr(def int64, path ...string) int64 {
	defer s.done()
	return s.inner.intOr(def, path...)
}

func (s *subFields) time(path ...string) (time.Time, bool) {
	defer s.done()
	return s.inner.time(path...)
}

// time returns the RFC 3339 time at path, and whether it is set; a string
// that is not such a time is a type error.
func (f *fields) time(path ...string) (time.Time, bool) {
	v := f.str(path...)
	if v == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		if f.err == nil {
			f.err = fmt.Errorf("%s is %q, want an RFC 3339 time", strings.Join(path, "."), v)
		}
		return time.Time{}, false
	}
	return t, true
}

// condition is one entry of status.conditions.
type condition struct {
	Type, Status, Reason, Message string
	// LastTransitionTime is zero when it is not set.
	LastTransitionTime time.Time
}

// text is the condition's reason and message as one phrase.
func (c condition) text() string {
	c.Reason, c.Message = strings.TrimSpace(c.Reason), strings.TrimSpace(c.Message)
	switch {
	case c.Reason == "":
		return c.Message
	case c.Message == "":
		return c.Reason
	}
	return c.Reason + ": " + c.Message
}

// conditions reads status.conditions.
func (f *fields) conditions() []condition {
	return f.conditionsAt([]string{"status", "conditions"}, f.objects("status", "conditions"))
}

// conditionsAt reads the conditions items, found at path (for messages).
func (f *fields) conditionsAt(path []string, items []map[string]any) []condition {
	out := make([]condition, 0, len(items))
	for i, m := range items {
		s := f.sub(m, indexed(path, i)...)
		c := condition{
			Type:    s.str("type"),
			Status:  s.str("status"),
			Reason:  s.str("reason"),
			Message: s.str("message"),
		}
		c.LastTransitionTime, _ = s.time("lastTransitionTime")
		out = append(out, c)
	}
	return out
}

// findCondition returns the condition of type t.
func findCondition(conds []condition, t string) (condition, bool) {
	for _, c := range conds {
		if c.Type == t {
			return c, true
		}
	}
	return condition{}, false
}
