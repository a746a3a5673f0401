package compiled

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// Shape is what the comparison of one object's old and new versions leaves
// out: the paths its ignore rules hide from every writer, and the writers
// (the users of managedFieldsManagers rules) whose changes to it the
// compiled layer leaves to the webhook. Objects of one shape share one
// compiled comparison.
type Shape struct {
	Paths [][]string
	Defer []string
}

// ID names the shape in the index; the empty shape is "".
func (s Shape) ID() string {
	if len(s.Paths) == 0 && len(s.Defer) == 0 {
		return ""
	}
	h := sha256.New()
	for _, p := range s.Paths {
		for _, t := range p {
			h.Write([]byte(strconv.Quote(t)))
		}
		h.Write([]byte{0})
	}
	h.Write([]byte{1})
	for _, u := range s.Defer {
		h.Write([]byte(strconv.Quote(u)))
	}
	return "s" + hex.EncodeToString(h.Sum(nil))[:10]
}

// compilable reports whether every path can be compiled: a path through a
// list element (a numeric token, as jq paths and pointers into lists give)
// cannot, since CEL has no way to compare a list but for one index.
func (s Shape) compilable() bool {
	for _, p := range s.Paths {
		for _, t := range p {
			if _, err := strconv.Atoi(t); err == nil {
				return false
			}
		}
	}
	return true
}

// trie is a set of paths; an end node hides itself and all below it.
type trie struct {
	end      bool
	children map[string]*trie
}

func newTrie(paths [][]string) *trie {
	root := &trie{}
	for _, p := range paths {
		n := root
		for _, tok := range p {
			if n.end {
				break
			}
			if n.children == nil {
				n.children = map[string]*trie{}
			}
			c := n.children[tok]
			if c == nil {
				c = &trie{}
				n.children[tok] = c
			}
			n = c
		}
		n.end, n.children = true, nil
	}
	return root
}

func (t *trie) child(tok string) *trie {
	if t == nil {
		return nil
	}
	return t.children[tok]
}

func (t *trie) keys() []string {
	if t == nil {
		return nil
	}
	out := make([]string, 0, len(t.children))
	for k := range t.children {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ends is the keys of the children a path ends at.
func (t *trie) ends() []string {
	var out []string
	for _, k := range t.keys() {
		if t.children[k].end {
			out = append(out, k)
		}
	}
	return out
}

// lit is a CEL string literal.
func lit(s string) string { return strconv.Quote(s) }

// list is a CEL list of string literals.
func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = lit(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
