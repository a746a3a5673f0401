package drift

import (
	"reflect"
	"testing"
)

func TestWithoutIgnored(t *testing.T) {
	rules, err := CompileRules([]RuleSpec{{Kind: "Deployment", JSONPointers: []string{"/spec/replicas", "/spec/template/spec/containers/1", "/spec/args/0"}}})
	if err != nil {
		t.Fatal(err)
	}
	desired := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},
"spec":{"replicas":3,"args":["a","b"],"template":{"spec":{"containers":[{"name":"web","image":"x"},{"name":"side","image":"y"}]}}}}`)
	got := WithoutIgnored(desired, For(rules, "apps", "Deployment", "shop", "web", nil))
	want := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},
"spec":{"template":{"spec":{"containers":[{"name":"web","image":"x"}]}}}}`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WithoutIgnored =\n%v\nwant\n%v", got, want)
	}
	if _, ok := desired["spec"].(map[string]any)["replicas"]; !ok {
		t.Fatal("WithoutIgnored modified its input")
	}
	// No matching rule: the same map comes back.
	same := WithoutIgnored(desired, For(rules, "", "ConfigMap", "shop", "web", nil))
	if reflect.ValueOf(same).Pointer() != reflect.ValueOf(desired).Pointer() {
		t.Fatal("without rules the desired object must be returned as is")
	}
}
