package drift

import "slices"

// AdmissionIgnores returns what the rules matching one object hide from a
// write at admission, in a form that can be compiled into the API server:
// the paths hidden from every writer (jsonPointers, and the paths the
// rules' jqPathExpressions yield on the desired object), and the users of
// managedFieldsManagers rules, for whom ForWrite hides the fields their
// managers own (which only the live object's managedFields can tell).
// Paths are sorted, without duplicates, and none is below another.
func AdmissionIgnores(rules []*Rule, group, kind, namespace, name string, desired map[string]any) (paths [][]string, users []string) {
	var all pathTrie
	for _, r := range rules {
		if !r.Matches(group, kind, namespace, name) {
			continue
		}
		if r.pointers != nil {
			r.pointers.each(nil, func(p []string) { all.add(p) })
		}
		for _, e := range r.jq {
			ps, err := e.paths(desired)
			if err != nil {
				continue // hides nothing, as in Compare
			}
			for _, p := range ps {
				all.add(p)
			}
		}
		if len(r.managers) > 0 {
			users = append(users, r.users...)
		}
	}
	all.each(nil, func(p []string) { paths = append(paths, p) })
	slices.SortFunc(paths, slices.Compare)
	slices.Sort(users)
	return paths, slices.Compact(users)
}

// each calls fn with every path in the set (a copy of it).
func (t *pathTrie) each(prefix []string, fn func([]string)) {
	if t.end {
		fn(slices.Clone(prefix))
		return
	}
	for tok, c := range t.children {
		c.each(append(prefix, tok), fn)
	}
}
