package health

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzAssess feeds arbitrary JSON objects to the assessment: whatever the
// shape, it must return one of the states and not panic.
func FuzzAssess(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		for _, doc := range fixtureDocs(f, filepath.Base(file)) {
			f.Add(doc, doc)
		}
	}
	f.Add([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"selector":{"a":"b"}}}`),
		[]byte(`{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s-1","labels":{"kubernetes.io/service-name":"s"}},"endpoints":[{"conditions":[]}]}`))
	f.Fuzz(func(t *testing.T, subject, related []byte) {
		var m, r map[string]any
		if json.Unmarshal(subject, &m) != nil || m == nil {
			return
		}
		obj := &unstructured.Unstructured{Object: m}
		lookup := Objects{obj}
		if json.Unmarshal(related, &r) == nil && r != nil {
			lookup = append(lookup, &unstructured.Unstructured{Object: r})
		}
		got, err := AssessWith(context.Background(), obj, lookup)
		if !got.State.Valid() {
			t.Fatalf("AssessWith = %+v, %v: invalid state", got, err)
		}
		if err != nil && got.State != Unknown {
			t.Fatalf("AssessWith = %+v with error %v; want Unknown", got, err)
		}
	})
}
