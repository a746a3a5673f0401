package yamledit

import (
	"fmt"
	"path"
	"strings"

	yaml "github.com/driftguard/driftguard/third_party/yamlv3"

	"github.com/driftguard/driftguard/jsonvalue"
)

// verify checks that edited decodes to original with exactly the ops
// applied to the target object, and every other document unchanged.
func verify(file string, original, edited []byte, target Target, ops []parsedOp) error {
	isJSON := strings.EqualFold(path.Ext(file), ".json")
	before, beforeNodes, err := decodeFile(original, isJSON)
	if err != nil {
		return err
	}
	after, _, err := decodeFile(edited, isJSON)
	if err != nil {
		return fmt.Errorf("internal: the edited file does not parse (%v): edit it by hand", err)
	}
	obj, err := locate(beforeNodes, target)
	if err != nil {
		return err
	}
	want := make([]any, len(before))
	copy(want, before)
	if obj.item < 0 {
		if want[obj.doc], err = applyValue(before[obj.doc], ops); err != nil {
			return err
		}
	} else {
		list, _ := jsonvalue.Copy(before[obj.doc]).(map[string]any)
		items, _ := list["items"].([]any)
		if obj.item >= len(items) {
			return fmt.Errorf("internal: item %d of the List at line %d not found", obj.item, obj.line)
		}
		if items[obj.item], err = applyValue(items[obj.item], ops); err != nil {
			return err
		}
		want[obj.doc] = list
	}
	if len(after) != len(want) {
		return fmt.Errorf("internal: the edit would turn %d documents into %d: edit the file by hand", len(want), len(after))
	}
	for i := range want {
		if !jsonvalue.Equal(want[i], after[i]) {
			return fmt.Errorf("internal: the edit would not give the intended document %d (want %v, got %v): edit the file by hand", i+1, want[i], after[i])
		}
	}
	return nil
}

// decodeFile decodes every document (YAML) or value (JSON) of a file.
func decodeFile(data []byte, isJSON bool) ([]any, []*yaml.Node, error) {
	var docs []*yaml.Node
	if isJSON {
		values, err := splitJSON(data)
		if err != nil {
			return nil, nil, err
		}
		for _, v := range values {
			docs = append(docs, v.node)
		}
	} else {
		var err error
		if docs, err = parseYAML(data); err != nil {
			return nil, nil, err
		}
	}
	out := make([]any, len(docs))
	for i, d := range docs {
		v, err := valueOf(d)
		if err != nil {
			return nil, nil, err
		}
		out[i] = v
	}
	return out, docs, nil
}
