package yamledit

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzEdit feeds arbitrary files and pointers to Edit: it must return an
// error or a result that verify accepted, and never panic.
func FuzzEdit(f *testing.F) {
	for _, name := range []string{"shop.yaml", "anchors.yaml", "list.yaml", "edge.yaml", "flow.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 1, "/metadata/name", "x", false)
		f.Add(b, 8, "/spec/template/spec/containers/0/image", "nginx", false)
		f.Add(b, 8, "/spec/template/spec/containers/0/env/1", "", true)
		f.Add(b, 1, "/spec/template/spec/containers/1/env/0/value", "a\nb", false)
	}
	f.Fuzz(func(t *testing.T, data []byte, line int, pointer, value string, remove bool) {
		for _, file := range []string{"f.yaml", "f.json"} {
			out, err := Edit(file, data, Target{Line: line}, []Op{{Pointer: pointer, Value: value, Delete: remove}})
			if err == nil && out == nil {
				t.Fatalf("no error and no output")
			}
		}
	})
}
