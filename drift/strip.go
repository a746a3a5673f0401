package drift

import "strconv"

// WithoutIgnored returns desired without the fields opts hides, for applying:
// a field an ignore rule hides is left to whoever owns it (an HPA's replicas,
// a field another controller manages), so a forced apply must not take it
// back. Without rules desired itself is returned, uncopied. An atomic list
// with a hidden element is left out whole: it cannot be owned in part.
func WithoutIgnored(desired map[string]any, opts Options) map[string]any {
	if opts.rules == nil && opts.Ignore == nil {
		return desired
	}
	c := comparer{opts: opts, tokens: make([]string, 0, 16)}
	if opts.rules != nil {
		c.hide = opts.rules.prepare(desired, isSecret(desired))
	}
	return c.stripMap(desired, schemaFor(desired, opts).top())
}

func (c *comparer) stripMap(m map[string]any, t typ) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		c.push(k)
		if v, keep := c.stripValue(k, e, t.field(k)); keep {
			out[k] = v
		}
		c.pop()
	}
	return out
}

// stripValue returns the value at c.tokens without hidden fields, and
// whether the field stays at all.
func (c *comparer) stripValue(key string, v any, t typ) (any, bool) {
	if !c.identity(key) && c.ignored() {
		return nil, false
	}
	switch x := v.(type) {
	case map[string]any:
		return c.stripMap(x, t), true
	case []any:
		return c.stripList(x, t)
	}
	return v, true
}

// identity reports fields an apply always needs.
func (c *comparer) identity(key string) bool {
	switch len(c.tokens) {
	case 1:
		return key == "apiVersion" || key == "kind"
	case 2:
		return c.tokens[0] == "metadata" && (key == "name" || key == "namespace")
	}
	return false
}

// stripList leaves out the hidden elements of a map list or set (each is
// owned on its own) and the whole of an atomic list with a hidden element.
func (c *comparer) stripList(list []any, t typ) ([]any, bool) {
	kind, keys := t.list()
	et := t.elem()
	keyed := false
	switch kind {
	case listMap, listSet:
		keyed = true
	case listNames:
		k, ok := indexKeys(list, keys, et)
		keyed = ok && k.distinct()
	}
	out := make([]any, 0, len(list))
	for i, e := range list {
		c.push(strconv.Itoa(i))
		v, keep := c.stripValue("", e, et)
		c.pop()
		if !keep {
			if !keyed {
				return nil, false
			}
			continue
		}
		out = append(out, v)
	}
	return out, true
}
