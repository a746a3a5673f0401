package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	// A copy of go.yaml.in/yaml/v3 with a bound on the nodes it makes
	// (third_party/yamlv3/README.md).
	yaml "github.com/driftguard/driftguard/third_party/yamlv3"
)

// document is one top-level value of a manifest file.
type document struct {
	line  int // 1-based line where the value starts
	value any // JSON-compatible
	// itemLines holds, when value is a map with an "items" array, the line of
	// each element, so that a List's items keep their own lines.
	itemLines []int
}

// yamlParserProblems are the messages of go-yaml's parser (as opposed to
// its scanner); go-yaml reports their line 0-based.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

var (
	yamlLineRE   = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	yamlAnchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// decodeYAML decodes every document of a YAML stream. Lines are absolute in
// the file. Empty documents (nothing, or only comments) are skipped. The
// limits bound the whole file, all its documents together: the nodes the
// parser makes, the nesting depth, the values aliases add, and the text
// the file decodes to; going
// beyond one is a *LimitError at the line where it happened.
func decodeYAML(data []byte, lim Limits) ([]document, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.SetMaxNodes(lim.MaxYAMLNodes)
	c := &yamlConverter{lim: lim}
	var docs []document
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			if nodes := (*yaml.NodeLimitError)(nil); errors.As(err, &nodes) {
				return nil, errAt(nodes.Line, "%w", nodesError(nodes.Limit))
			}
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				line, _ := strconv.Atoi(m[1])
				if yamlParserProblems[m[2]] {
					// go-yaml reports parser errors at a 0-based line.
					line++
				}
				// An error at the end of the stream belongs to the last line
				// with content.
				line = min(line, lastContentLine(data))
				return nil, &lineError{line: line, err: errors.New(m[2])}
			}
			if m := yamlAnchorRE.FindStringSubmatch(err.Error()); m != nil {
				if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
					return nil, &lineError{line: bytes.Count(data[:i], []byte("\n")) + 1, err: fmt.Errorf("unknown anchor %q", m[1])}
				}
			}
			return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
		}
		root := &n
		if root.Kind == yaml.DocumentNode {
			if len(root.Content) == 0 {
				continue
			}
			root = root.Content[0]
		}
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			continue
		}
		v, err := c.value(root)
		if err != nil {
			return nil, err
		}
		docs = append(docs, document{line: root.Line, value: v, itemLines: yamlItemLines(root)})
	}
}

// yamlItemLines returns the lines of the elements of the "items" sequence of
// a mapping node.
func yamlItemLines(n *yaml.Node) []int {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "items" {
			continue
		}
		seq := resolveAlias(n.Content[i+1])
		if seq.Kind != yaml.SequenceNode {
			return nil
		}
		lines := make([]int, len(seq.Content))
		for j, item := range seq.Content {
			lines[j] = item.Line
		}
		return lines
	}
	return nil
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// YAMLValue turns a YAML node into the JSON-compatible value Render makes of
// it: aliases and merge keys resolved (explicit keys win), scalars as nil,
// bool, int64, float64 or string. Errors name the line. The render limits
// of the process bound it (nesting, alias values, decoded text).
func YAMLValue(n *yaml.Node) (any, error) {
	c := yamlConverter{lim: Limits{}.effective()}
	return c.value(n)
}

// yamlConverter turns yaml nodes into JSON-compatible values, within the
// limits, counted over everything it converts (a whole file).
type yamlConverter struct {
	lim     Limits
	depth   int   // lists and mappings open
	inAlias int   // > 0 while expanding an alias
	aliased int   // values added by aliases
	text    int64 // bytes of keys and scalars
}

func (c *yamlConverter) value(n *yaml.Node) (any, error) {
	if c.inAlias > 0 {
		if c.aliased++; c.aliased > c.lim.MaxAliasValues {
			return nil, errAt(n.Line, "%w", aliasError(c.lim.MaxAliasValues))
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, errAt(n.Line, "unknown alias %q", n.Value)
		}
		c.inAlias++
		defer func() { c.inAlias-- }()
		return c.value(n.Alias)
	case yaml.SequenceNode:
		if err := c.enter(n); err != nil {
			return nil, err
		}
		defer c.leave()
		out := make([]any, 0, len(n.Content))
		for _, item := range n.Content {
			v, err := c.value(item)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		if err := c.enter(n); err != nil {
			return nil, err
		}
		defer c.leave()
		out := make(map[string]any, len(n.Content)/2)
		if err := c.mapping(n, out, false); err != nil {
			return nil, err
		}
		return out, nil
	case yaml.ScalarNode:
		if err := c.addText(n, len(n.Value)); err != nil {
			return nil, err
		}
		return scalar(n)
	}
	return nil, errAt(n.Line, "unsupported YAML node")
}

// enter opens a list or mapping, within the nesting limit.
func (c *yamlConverter) enter(n *yaml.Node) error {
	if c.depth++; c.depth > c.lim.MaxDepth {
		return errAt(n.Line, "%w", depthError(c.lim.MaxDepth))
	}
	return nil
}

func (c *yamlConverter) leave() { c.depth-- }

// addText counts decoded text, within the limit.
func (c *yamlConverter) addText(n *yaml.Node, size int) error {
	if c.text += int64(size); c.text > c.lim.MaxDecodedBytes {
		return errAt(n.Line, "%w", decodedError(c.lim.MaxDecodedBytes))
	}
	return nil
}

// mapping adds the pairs of n to out. Merged pairs (<<) never override keys
// set explicitly; merge reports whether n is being merged.
func (c *yamlConverter) mapping(n *yaml.Node, out map[string]any, merge bool) error {
	explicit := map[string]bool{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if resolveAlias(k).Kind != yaml.ScalarNode || resolveAlias(k).ShortTag() != "!!str" {
			return errAt(k.Line, "map key %q is not a string", k.Value)
		}
		key := resolveAlias(k).Value
		if explicit[key] {
			return errAt(k.Line, "duplicate map key %q", key)
		}
		explicit[key] = true
		if _, set := out[key]; set && merge {
			continue
		}
		if err := c.addText(k, len(key)); err != nil {
			return err
		}
		val, err := c.value(v)
		if err != nil {
			return err
		}
		out[key] = val
	}
	for _, m := range merges {
		if err := c.merge(m, out, true); err != nil {
			return err
		}
	}
	return nil
}

// merge adds the pairs of the merge value src (<<: src) to out: a mapping,
// or (list true) a list of mappings. Pairs merged through an alias
// (<<: *base) are values the alias adds.
func (c *yamlConverter) merge(src *yaml.Node, out map[string]any, list bool) error {
	if src.Kind == yaml.AliasNode {
		c.inAlias++
		defer func() { c.inAlias-- }()
	}
	src = resolveAlias(src)
	if list && src.Kind == yaml.SequenceNode {
		for _, m := range src.Content {
			if err := c.merge(m, out, false); err != nil {
				return err
			}
		}
		return nil
	}
	if src.Kind != yaml.MappingNode {
		return errAt(src.Line, "merge value is not a mapping")
	}
	if err := c.enter(src); err != nil {
		return err
	}
	defer c.leave()
	return c.mapping(src, out, true)
}

// scalar resolves a scalar to nil, bool, int64, float64 or string.
// Timestamps, binary and custom tags keep their text.
func scalar(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, errAt(n.Line, "bool %q: %w", n.Value, err)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, errAt(n.Line, "int %q out of range", n.Value)
		}
		return f, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, errAt(n.Line, "float %q: %w", n.Value, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errAt(n.Line, "float %q has no JSON form", n.Value)
		}
		return f, nil
	default:
		return n.Value, nil
	}
}

// lastContentLine returns the 1-based line of the last non-blank byte.
func lastContentLine(data []byte) int {
	end := len(bytes.TrimRight(data, " \t\r\n"))
	return bytes.Count(data[:max(end-1, 0)], []byte("\n")) + 1
}
