package render

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzSubstitute renders a file of objects with ${VAR} substitution: the
// variables CLUSTER and REPLICAS, and one the fuzzer names and sets. It
// must not panic, substituted objects must be valid objects within the
// decoding limits (a variable named many times cannot make an object
// larger than MaxDecodedBytes), and a file without "$" renders to the same
// objects with substitution as without.
func FuzzSubstitute(f *testing.F) {
	f.Add(substDeploy, "TAG", "1.2.3")
	f.Add(substDeploy, "NAMESPACE", "")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: ${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}${BIG}\n", "BIG", strings.Repeat("x", 9000))
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: ${V}\n", "V", "b\n  c: d\nkind: Secret")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: ${V}\n", "V", "&a [*a]")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${V:-x}\n  annotations: {driftguard.io/substitute: disabled}\ndata: {a: ${NOPE}}\n", "V", "")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"${V:0:2}${V/a/b}${V^^}${#V}\"}\n", "V", "abc")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: \"${\", b: \"$${V}\", c: ${V:?must be set}}\n", "V", "1")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: y}\nstringData: {a: b}\n", "_", "$")
	f.Fuzz(func(t *testing.T, text, name, value string) {
		fsys := files("apps/objects.yaml", text)
		vars := map[string]string{"CLUSTER": "eu1", "REPLICAS": "3"}
		if CheckVarName(name) == nil {
			vars[name] = value
		}
		objs, err := RenderWith(fsys, "apps", Source{}, RenderOptions{Vars: vars, Limits: fuzzLimits})
		if err != nil {
			if strings.Contains(err.Error(), "render failed: ") {
				t.Fatalf("panic: %v", err)
			}
			return
		}
		for _, o := range objs {
			m := o.Obj().Object
			if err := validate(m); err != nil {
				t.Fatalf("object %s: %v", o.Key, err)
			}
			depth, n := measure(m)
			if depth > fuzzLimits.MaxDepth || n > fuzzLimits.MaxDecodedBytes {
				t.Fatalf("object %s is %d deep with %d bytes of text, limits %d and %d", o.Key, depth, n, fuzzLimits.MaxDepth, fuzzLimits.MaxDecodedBytes)
			}
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("object %s is not JSON: %v", o.Key, err)
			}
		}
		if strings.Contains(text, "$") {
			return
		}
		plain, err := RenderWith(fsys, "apps", Source{}, RenderOptions{Limits: fuzzLimits})
		if err != nil {
			t.Fatalf("renders with substitution, not without: %v", err)
		}
		if len(plain) != len(objs) {
			t.Fatalf("%d objects with substitution, %d without", len(objs), len(plain))
		}
		for i := range plain {
			if !reflect.DeepEqual(plain[i].Obj().Object, objs[i].Obj().Object) {
				t.Fatalf("object %s without \"$\" changed by substitution", plain[i].Key)
			}
		}
	})
}
