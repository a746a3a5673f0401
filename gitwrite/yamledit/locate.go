package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// parseYAML decodes every document of a YAML stream into node trees, of
// maxValues nodes at most in all (a node takes about 180 bytes of heap, and as
// little as two bytes of the file).
func parseYAML(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.SetMaxNodes(maxValues)
	var docs []*yaml.Node
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
		}
		docs = append(docs, &n)
	}
}

// candidate is an object of a file: a document's root, or an element of a
// List's items.
type candidate struct {
	node     *yaml.Node
	doc      int // index of the document
	item     int // index in items, -1 for the document itself
	line     int
	identity identity
}

type identity struct{ kind, name, namespace string }

// candidates lists the objects of a file in order. Empty documents (nothing
// or only comments) are skipped, as package render skips them.
func candidates(docs []*yaml.Node) []candidate {
	var out []candidate
	for i, d := range docs {
		root := d
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind != yaml.MappingNode {
			continue
		}
		id := identityOf(root)
		if items := listItems(root, id.kind); items != nil {
			for j, it := range items.Content {
				if it.Kind == yaml.MappingNode {
					out = append(out, candidate{node: it, doc: i, item: j, line: it.Line, identity: identityOf(it)})
				}
			}
			continue
		}
		out = append(out, candidate{node: root, doc: i, item: -1, line: root.Line, identity: id})
	}
	return out
}

// listItems returns the items sequence of a List (kind List or *List).
func listItems(n *yaml.Node, kind string) *yaml.Node {
	if kind != "List" && !strings.HasSuffix(kind, "List") {
		return nil
	}
	if i := findKey(n, "items"); i >= 0 {
		if it := n.Content[i]; it.Kind == yaml.SequenceNode {
			return it
		}
	}
	return nil
}

func identityOf(n *yaml.Node) identity {
	v, err := valueOf(n)
	if err != nil {
		return identity{}
	}
	m, _ := v.(map[string]any)
	md, _ := m["metadata"].(map[string]any)
	kind, _ := m["kind"].(string)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return identity{kind: kind, name: name, namespace: ns}
}

func (id identity) matches(t Target) bool {
	return (t.Kind == "" || t.Kind == id.kind) && (t.Name == "" || t.Name == id.name) &&
		(t.Namespace == "" || id.namespace == "" || t.Namespace == id.namespace)
}

// locate finds the object target names: the one starting at its line
// when that one has its kind and name, else the one with its kind, name and
// namespace.
func locate(docs []*yaml.Node, t Target) (candidate, error) {
	all := candidates(docs)
	atLine := ""
	for _, c := range all {
		if t.Line > 0 && c.line == t.Line {
			if c.identity.matches(t) {
				return c, nil
			}
			atLine = fmt.Sprintf(" (line %d holds %s %s)", t.Line, c.identity.kind, c.identity.name)
		}
	}
	if t.Kind == "" || t.Name == "" {
		return candidate{}, fmt.Errorf("no object starts at line %d", t.Line)
	}
	var found []candidate
	for _, c := range all {
		if c.identity.matches(t) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return candidate{}, fmt.Errorf("no object %s in the file%s", t, atLine)
	case 1:
		return found[0], nil
	}
	return candidate{}, fmt.Errorf("%d objects match %s, at lines %d and %d", len(found), t, found[0].line, found[1].line)
}

// findKey returns the index in n.Content of the value of key, or -1; merge
// keys are not looked into.
func findKey(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if isMergeKey(k) {
			continue
		}
		if resolve(k).Value == key {
			return i + 1
		}
	}
	return -1
}

// findMerged returns the value a merge key (<<) of n gives key, or nil.
func findMerged(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMergeKey(n.Content[i]) {
			continue
		}
		for _, src := range mergeSources(n.Content[i+1]) {
			if src.Kind != yaml.MappingNode {
				continue
			}
			if j := findKey(src, key); j >= 0 {
				return src.Content[j]
			}
			if v := findMerged(src, key); v != nil {
				return v
			}
		}
	}
	return nil
}

// aliasTargets returns the nodes some alias refers to.
func aliasTargets(docs []*yaml.Node) map[*yaml.Node]bool {
	out := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.AliasNode {
			if n.Alias != nil {
				out[n.Alias] = true
			}
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, d := range docs {
		walk(d)
	}
	return out
}
