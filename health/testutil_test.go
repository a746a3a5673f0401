package health

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// readFixture returns the objects of testdata/name, in file order, with
// numbers as the API machinery holds them (int64).
func readFixture(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range fixtureDocs(t, name) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, u)
	}
	return out
}

// readFixtureFloats is readFixture with numbers as encoding/json decodes
// them into any (float64), as a caller that did not use the API machinery
// would hold them.
func readFixtureFloats(t *testing.T, name string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range fixtureDocs(t, name) {
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// fixtureDocs returns each YAML document of testdata/name as JSON.
func fixtureDocs(t testing.TB, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs [][]byte
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := yaml.Marshal(&n)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j, err := sigsyaml.YAMLToJSON(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs = append(docs, j)
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no documents", name)
	}
	return docs
}
