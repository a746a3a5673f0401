// Package yamledit changes fields of one Kubernetes object inside a manifest
// file and keeps everything else of the file as it was: comments, quoting,
// blank lines, key order, anchors and the other documents of a multi-document
// file.
//
// A YAML file is parsed into go.yaml.in/yaml/v3 node trees, which locate each
// field and its exact place in the text; only the bytes of the changed nodes
// are replaced. A field inside a flow collection ({a: 1}, [x, y]) re-renders
// that collection; a field reached through an alias (*name) or a merge key
// (<<) is written as an explicit copy in the object, so the anchor and its
// other uses stay unchanged. A JSON file is rewritten value by value, with
// the indentation it had.
//
// Every result is checked: the new file must decode to the old documents with
// exactly the requested changes, else Edit returns an error and nothing is
// written.
package yamledit
