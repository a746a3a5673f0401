package drift

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// managedLive is liveDeployment with the managed fields of an SSA apply by
// driftguard and a scale by the HPA (kube-controller-manager, scale
// subresource).
const managedLive = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  managedFields:
  - manager: driftguard
    operation: Apply
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:labels: {f:app: {}}}
      f:spec:
        f:selector: {}
        f:template:
          f:metadata: {f:labels: {f:app: {}}}
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:name: {}
                f:ports: {}
                f:resources: {f:requests: {f:cpu: {}, f:memory: {}}, f:limits: {f:cpu: {}}}
  - manager: kube-controller-manager
    operation: Update
    subresource: scale
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:replicas: {}}}
  - manager: image-updater
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata: {f:labels: {.: {}}}
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}: {f:image: {}}
              k:{"name":"sidecar"}: {f:image: {}}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, protocol: TCP}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 1000m}}
      - name: sidecar
        image: envoy
`

func deploymentSpec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }

func podSpec(m map[string]any) map[string]any {
	return deploymentSpec(m)["template"].(map[string]any)["spec"].(map[string]any)
}

func container(m map[string]any, i int) map[string]any {
	return podSpec(m)["containers"].([]any)[i].(map[string]any)
}

var (
	scale     = func(l map[string]any) { deploymentSpec(l)["replicas"] = int64(5) }
	bumpImage = func(l map[string]any) { container(l, 0)["image"] = "nginx:1.28" }
	bumpCPU   = func(l map[string]any) {
		container(l, 0)["resources"].(map[string]any)["limits"].(map[string]any)["cpu"] = "2"
	}
	dropWeb     = func(l map[string]any) { podSpec(l)["containers"] = podSpec(l)["containers"].([]any)[1:] }
	relabel     = func(l map[string]any) { l["metadata"].(map[string]any)["labels"].(map[string]any)["app"] = "other" }
	scaleAndCPU = func(l map[string]any) { scale(l); bumpCPU(l) }
)

type objectID struct{ group, kind, namespace, name string }

var web = objectID{"apps", "Deployment", "shop", "web"}

func TestIgnoreRules(t *testing.T) {
	tests := []struct {
		name    string
		rules   []RuleSpec
		id      *objectID // default: web
		desired string    // default: deployment
		live    string    // default: liveDeployment
		edit    func(map[string]any)
		want    []string
	}{
		{name: "no rules", edit: scale, want: []string{"/spec/replicas"}},

		// JSON pointers
		{name: "pointer hides the field", rules: []RuleSpec{{JSONPointers: []string{"/spec/replicas"}}}, edit: scaleAndCPU,
			want: []string{"/spec/template/spec/containers/0/resources/limits/cpu"}},
		{name: "pointer hides everything below", rules: []RuleSpec{{JSONPointers: []string{"/spec/template/spec/containers/0"}}}, edit: scaleAndCPU,
			want: []string{"/spec/replicas"}},
		{name: "pointer hides a missing list element", rules: []RuleSpec{{JSONPointers: []string{"/spec/template/spec/containers/0"}}}, edit: dropWeb},
		{name: "pointer to metadata", rules: []RuleSpec{{JSONPointers: []string{"/metadata/labels"}}}, edit: relabel},
		{name: "pointer to annotations", rules: []RuleSpec{{JSONPointers: []string{"/metadata/annotations"}}},
			desired: `{"kind":"ConfigMap","metadata":{"annotations":{"team":"a"}}}`, live: `{"kind":"ConfigMap","metadata":{"annotations":{"team":"b"}}}`},
		{name: "pointer unescapes ~1 and ~0", rules: []RuleSpec{{JSONPointers: []string{"/metadata/labels/a~1b~0c"}}},
			desired: `{"kind":"ConfigMap","metadata":{"labels":{"a/b~c":"1","d":"1"}}}`, live: `{"kind":"ConfigMap","metadata":{"labels":{"d":"2"}}}`,
			want: []string{"/metadata/labels/d"}},
		{name: "pointer is not a prefix match on names", rules: []RuleSpec{{JSONPointers: []string{"/spec/replica"}}}, edit: scale, want: []string{"/spec/replicas"}},
		{name: "stringData pointer hides the Secret data key", rules: []RuleSpec{{JSONPointers: []string{"/stringData/password"}}},
			desired: `{"apiVersion":"v1","kind":"Secret","stringData":{"password":"a"}}`, live: `{"apiVersion":"v1","kind":"Secret","data":{"password":"Yg=="}}`},

		// matching
		{name: "kind matches", rules: []RuleSpec{{Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}, edit: scale},
		{name: "kind differs", rules: []RuleSpec{{Kind: "StatefulSet", JSONPointers: []string{"/spec/replicas"}}}, edit: scale, want: []string{"/spec/replicas"}},
		{name: "group differs", rules: []RuleSpec{{Group: "extensions", JSONPointers: []string{"/spec/replicas"}}}, edit: scale, want: []string{"/spec/replicas"}},
		{name: "namespace matches", rules: []RuleSpec{{Namespace: "shop", JSONPointers: []string{"/spec/replicas"}}}, edit: scale},
		{name: "namespace differs", rules: []RuleSpec{{Namespace: "shop", JSONPointers: []string{"/spec/replicas"}}}, id: &objectID{"apps", "Deployment", "shop-2", "web"}, edit: scale, want: []string{"/spec/replicas"}},
		{name: "name differs", rules: []RuleSpec{{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "api", JSONPointers: []string{"/spec/replicas"}}}, edit: scale, want: []string{"/spec/replicas"}},
		{name: "all match fields match", rules: []RuleSpec{{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web", JSONPointers: []string{"/spec/replicas"}}}, edit: scale},
		{name: "rules add up", rules: []RuleSpec{{Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}, {Name: "web", JSONPointers: []string{"/spec/template/spec/containers/0/resources"}}}, edit: scaleAndCPU},

		// jq path expressions, over the desired object
		{name: "jq field", rules: []RuleSpec{{JQPathExpressions: []string{".spec.replicas"}}}, edit: scaleAndCPU,
			want: []string{"/spec/template/spec/containers/0/resources/limits/cpu"}},
		{name: "jq image of the container named web", rules: []RuleSpec{{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "web") | .image`}}}, edit: bumpImage},
		{name: "jq select misses", rules: []RuleSpec{{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "api") | .image`}}}, edit: bumpImage,
			want: []string{"/spec/template/spec/containers/0/image"}},
		{name: "jq whole container, missing in live", rules: []RuleSpec{{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "web")`}}}, edit: dropWeb},
		{name: "jq annotation with a dotted key", rules: []RuleSpec{{JQPathExpressions: []string{`.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]`}}},
			desired: `{"kind":"Deployment","spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"a","team":"x"}}}}}`,
			live:    `{"kind":"Deployment","spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"b","team":"y"}}}}}`,
			want:    []string{"/spec/template/metadata/annotations/team"}},
		{name: "jq negative index", rules: []RuleSpec{{JQPathExpressions: []string{".spec.template.spec.containers[-1].image"}}}, edit: bumpImage},
		{name: "jq slice", rules: []RuleSpec{{JQPathExpressions: []string{".spec.args[1:]"}}},
			desired: `{"kind":"X","spec":{"args":["a","b","c"]}}`, live: `{"kind":"X","spec":{"args":["a","x","y"]}}`},
		{name: "jq index into a slice", rules: []RuleSpec{{JQPathExpressions: []string{".spec.args[1:][1]"}}},
			desired: `{"kind":"X","spec":{"args":["a","b","c"]}}`, live: `{"kind":"X","spec":{"args":["a","x","y"]}}`, want: []string{"/spec/args/1"}},
		{name: "jq runtime error hides nothing", rules: []RuleSpec{{JQPathExpressions: []string{".spec.nothing[]", ".spec.replicas"}}}, edit: scaleAndCPU,
			want: []string{"/spec/template/spec/containers/0/resources/limits/cpu"}},
		{name: "jq on another kind", rules: []RuleSpec{{Kind: "StatefulSet", JQPathExpressions: []string{".spec.replicas"}}}, edit: scale, want: []string{"/spec/replicas"}},

		// managed fields, from the live object
		{name: "HPA-owned replicas", rules: []RuleSpec{{ManagedFieldsManagers: []string{"kube-controller-manager"}}}, live: managedLive, edit: scaleAndCPU,
			want: []string{"/spec/template/spec/containers/0/resources/limits/cpu"}},
		{name: "replicas not hidden for another manager", rules: []RuleSpec{{ManagedFieldsManagers: []string{"image-updater"}}}, live: managedLive, edit: scale,
			want: []string{"/spec/replicas"}},
		{name: "manager owns an element field by name", rules: []RuleSpec{{ManagedFieldsManagers: []string{"image-updater"}}}, live: managedLive, edit: func(l map[string]any) { bumpImage(l); bumpCPU(l) },
			want: []string{"/spec/template/spec/containers/0/resources/limits/cpu"}},
		{name: "the element itself is not owned", rules: []RuleSpec{{ManagedFieldsManagers: []string{"image-updater"}}}, live: managedLive, edit: dropWeb,
			want: []string{"/spec/template/spec/containers/0"}},
		{name: "dot marker owns nothing below", rules: []RuleSpec{{ManagedFieldsManagers: []string{"image-updater"}}}, live: managedLive, edit: relabel,
			want: []string{"/metadata/labels/app"}},
		{name: "atomic field owned whole", rules: []RuleSpec{{ManagedFieldsManagers: []string{"driftguard"}}}, live: managedLive, edit: func(l map[string]any) {
			container(l, 0)["ports"] = []any{map[string]any{"containerPort": int64(81)}}
			deploymentSpec(l)["selector"] = map[string]any{"matchLabels": map[string]any{"app": "x"}}
			scale(l)
		}, want: []string{"/spec/replicas"}},
		{name: "several managers", rules: []RuleSpec{{ManagedFieldsManagers: []string{"kube-controller-manager"}}, {ManagedFieldsManagers: []string{"image-updater"}}}, live: managedLive, edit: func(l map[string]any) { scale(l); bumpImage(l) }},
		{name: "no managed fields in live", rules: []RuleSpec{{ManagedFieldsManagers: []string{"kube-controller-manager"}}}, edit: scale, want: []string{"/spec/replicas"}},
		{name: "FieldsV1 as raw JSON", rules: []RuleSpec{{ManagedFieldsManagers: []string{"hpa"}}},
			desired: `{"kind":"X","spec":{"replicas":3,"paused":false}}`,
			live:    `{"kind":"X","metadata":{"managedFields":[{"manager":"hpa","fieldsV1":"{\"f:spec\":{\"f:replicas\":{}}}"}]},"spec":{"replicas":5,"paused":true}}`,
			want:    []string{"/spec/paused"}},
		{name: "set element by value and list element by index", rules: []RuleSpec{{ManagedFieldsManagers: []string{"m"}}},
			desired: `{"kind":"X","spec":{"set":["a","b"],"pos":[{"x":1},{"x":2}]}}`,
			live:    `{"kind":"X","metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:set":{"v:\"b\"":{}},"f:pos":{"i:1":{}}}}}]},"spec":{"set":["a","c"],"pos":[{"x":1},{"x":3}]}}`},
		{name: "keyed element with a numeric key", rules: []RuleSpec{{ManagedFieldsManagers: []string{"m"}}},
			desired: `{"kind":"X","spec":{"ports":[{"port":80,"protocol":"TCP","targetPort":8080}]}}`,
			live:    `{"kind":"X","metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{"f:targetPort":{}}}}}}]},"spec":{"ports":[{"port":80,"protocol":"TCP","targetPort":9090}]}}`},

		// all three kinds in one rule
		{name: "pointer, jq and manager together", rules: []RuleSpec{{Kind: "Deployment", JSONPointers: []string{"/metadata/labels"}, JQPathExpressions: []string{".spec.template.spec.containers[0].resources"}, ManagedFieldsManagers: []string{"kube-controller-manager"}}},
			live: managedLive, edit: func(l map[string]any) { scaleAndCPU(l); relabel(l) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired, live := deployment, liveDeployment
			if tt.desired != "" {
				desired = tt.desired
			}
			if tt.live != "" {
				live = tt.live
			}
			id := web
			if tt.id != nil {
				id = *tt.id
			}
			d, l := obj(t, desired), obj(t, live)
			if tt.edit != nil {
				tt.edit(l)
			}
			rules, err := CompileRules(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			opts := For(rules, id.group, id.kind, id.namespace, id.name, l)
			got := Paths(Compare(d, l, opts))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Compare paths = %v, want %v", got, tt.want)
			}
			if c := Compare(d, d, For(rules, id.group, id.kind, id.namespace, id.name, d)); len(c) != 0 {
				t.Fatalf("Compare(x, x) with rules = %v", c)
			}
		})
	}
}

func TestCompileRulesErrors(t *testing.T) {
	tests := []struct {
		name  string
		rules []RuleSpec
		want  []string
	}{
		{name: "jq syntax", rules: []RuleSpec{{JSONPointers: []string{"/spec/replicas"}}, {JQPathExpressions: []string{".spec["}}},
			want: []string{`ignore[1].jqPathExpressions[0] ".spec[": unexpected EOF`}},
		{name: "jq unknown function", rules: []RuleSpec{{JQPathExpressions: []string{".spec", "nosuch(.a)"}}},
			want: []string{`ignore[0].jqPathExpressions[1] "nosuch(.a)": function not defined: nosuch/1`}},
		{name: "jq module", rules: []RuleSpec{{JQPathExpressions: []string{`import "a" as a; .x`}}},
			want: []string{`ignore[0].jqPathExpressions[0] "import \"a\" as a; .x": modules are not supported`}},
		{name: "pointer without slash", rules: []RuleSpec{{JSONPointers: []string{"spec/replicas"}}},
			want: []string{`ignore[0].jsonPointers[0] "spec/replicas": a JSON pointer starts with "/"`}},
		{name: "pointer bad escape", rules: []RuleSpec{{JSONPointers: []string{"/metadata/labels/a~2"}}},
			want: []string{`ignore[0].jsonPointers[0] "/metadata/labels/a~2": invalid escape`}},
		{name: "empty pointer", rules: []RuleSpec{{JSONPointers: []string{""}}},
			want: []string{`ignore[0].jsonPointers[0] "": empty pointer would hide the whole object`}},
		{name: "empty manager", rules: []RuleSpec{{ManagedFieldsManagers: []string{" "}}},
			want: []string{`ignore[0].managedFieldsManagers[0] " ": empty manager name`}},
		{name: "rule selecting nothing", rules: []RuleSpec{{Kind: "Deployment"}},
			want: []string{`ignore[0]: selects no fields`}},
		{name: "every error is reported", rules: []RuleSpec{{JSONPointers: []string{"x"}}, {JQPathExpressions: []string{"]"}}},
			want: []string{`ignore[0].jsonPointers[0] "x"`, `ignore[1].jqPathExpressions[0] "]": unexpected token "]"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := CompileRules(tt.rules)
			if err == nil {
				t.Fatalf("no error, rules %v", rules)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRuleCheck(t *testing.T) {
	d := obj(t, deployment)
	tests := []struct {
		name string
		expr string
		want string // "" for no error
	}{
		{name: "fine", expr: `.spec.template.spec.containers[] | select(.name == "web") | .image`},
		{name: "missing field is a path, not an error", expr: ".spec.nothing.deeper"},
		{name: "iterate over null", expr: ".spec.nothing[]", want: `ignore[0].jqPathExpressions[0] ".spec.nothing[]": cannot iterate over: null`},
		{name: "not a path", expr: "1", want: "invalid path against"},
		{name: "error()", expr: `error("boom")`, want: "boom"},
		{name: "no environment", expr: `.[env | keys[0] // "x"]`},
		{name: "endless", expr: "repeat(.)", want: `"repeat(.)": `}, // too many paths, or the deadline
		{name: "stuck", expr: "until(false; .)", want: "context deadline exceeded"},
		{name: "halt stops quietly", expr: ".spec.replicas, halt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := CompileRules([]RuleSpec{{JQPathExpressions: []string{tt.expr}}})
			if err != nil {
				t.Fatal(err)
			}
			err = rules[0].Check(d)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Check = %v, want an error containing %q", err, tt.want)
			}
			if err := Check(rules, "apps", "Deployment", "shop", "web", d); (err != nil) != (tt.want != "") {
				t.Fatalf("package Check = %v", err)
			}
		})
	}
}

func TestForNoMatchIsZero(t *testing.T) {
	rules, err := CompileRules([]RuleSpec{{Kind: "StatefulSet", JSONPointers: []string{"/spec/replicas"}}, {Namespace: "other", ManagedFieldsManagers: []string{"x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if o := For(rules, "apps", "Deployment", "shop", "web", obj(t, liveDeployment)); o.rules != nil || o.Ignore != nil {
		t.Fatalf("For with no matching rule = %+v, want the zero Options", o)
	}
	if testing.AllocsPerRun(100, func() { For(rules, "apps", "Deployment", "shop", "web", nil) }) != 0 {
		t.Fatal("For allocates when nothing matches")
	}
	// A manager rule that matches but owns nothing in this object.
	rules, _ = CompileRules([]RuleSpec{{ManagedFieldsManagers: []string{"nobody"}}})
	if o := For(rules, "apps", "Deployment", "shop", "web", obj(t, managedLive)); o.rules != nil {
		t.Fatalf("For with a manager owning nothing = %+v, want the zero Options", o)
	}
}

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"/spec/replicas", []string{"spec", "replicas"}},
		{"/", []string{""}},
		{"/a~1b/c~0d/~01", []string{"a/b", "c~d", "~1"}},
		{"/spec/containers/0", []string{"spec", "containers", "0"}},
	}
	for _, tt := range tests {
		got, err := ParsePointer(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParsePointer(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		// Round trip with the pointers Compare writes.
		if p := pointer(got); p != tt.in && tt.in != "/a~1b/c~0d/~01" {
			t.Errorf("pointer(ParsePointer(%q)) = %q", tt.in, p)
		}
	}
}

// FuzzCompareRules checks that rules only ever hide changes: with any rule,
// Compare(x, x) stays empty and every change reported with the rule is also
// reported without it.
func FuzzCompareRules(f *testing.F) {
	f.Add(`{"kind":"X","spec":{"a":[1,2],"b":{"c":"d"}}}`, "/spec/a/1", ".spec.b", "m", `{"f:spec":{"f:b":{}}}`)
	f.Add(`{"kind":"X","spec":{"l":[{"name":"a","v":1},{"name":"b"}]}}`, "/spec/l/0", `.spec.l[] | select(.name == "b")`, "m", `{"f:spec":{"f:l":{"k:{\"name\":\"a\"}":{"f:v":{}}}}}`)
	f.Add(`{"apiVersion":"v1","kind":"Secret","stringData":{"a":"b"}}`, "/stringData/a", "..", "", `{}`)
	f.Add(`{"kind":"X","metadata":{"labels":{"a":"1"},"annotations":{"b":"2"}}}`, "/metadata", ".metadata.labels[]", "m", `{"f:metadata":{"f:labels":{".":{}}}}`)
	f.Fuzz(func(t *testing.T, doc, ptr, jq, manager, fieldsV1 string) {
		var d map[string]any
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d == nil {
			return
		}
		var fields any
		if json.Unmarshal([]byte(fieldsV1), &fields) != nil {
			fields = nil
		}
		live := map[string]any{"metadata": map[string]any{"managedFields": []any{map[string]any{"manager": manager, "fieldsV1": fields}}}}
		spec := RuleSpec{JQPathExpressions: []string{jq}}
		if ptr != "" {
			spec.JSONPointers = []string{ptr}
		}
		if manager != "" {
			spec.ManagedFieldsManagers = []string{manager}
		}
		rules, err := CompileRules([]RuleSpec{spec})
		if err != nil {
			return
		}
		_ = Check(rules, "", "X", "", "", d)
		if got := Compare(d, d, For(rules, "", "X", "", "", d)); len(got) != 0 {
			t.Fatalf("Compare(x, x) with rules found drift: %v", got)
		}
		without := Paths(Compare(d, live, Options{}))
		with := Paths(Compare(d, live, For(rules, "", "X", "", "", live)))
		for _, p := range with {
			if !slices.Contains(without, p) {
				t.Fatalf("rule added a change %s: with %v, without %v", p, with, without)
			}
		}
	})
}

func benchmarkRules(b *testing.B, specs []RuleSpec, live string) {
	d, l := obj(b, deployment), obj(b, live)
	rules, err := CompileRules(specs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(Compare(d, l, For(rules, "apps", "Deployment", "shop", "web", l))) != 0 {
			b.Fatal("unexpected drift")
		}
	}
}

func BenchmarkCompareDeploymentNoMatchingRule(b *testing.B) {
	benchmarkRules(b, []RuleSpec{{Kind: "StatefulSet", JSONPointers: []string{"/spec/replicas"}}}, liveDeployment)
}

func BenchmarkCompareDeploymentPointerRule(b *testing.B) {
	benchmarkRules(b, []RuleSpec{{JSONPointers: []string{"/spec/replicas", "/spec/template/spec/containers/0/image"}}}, liveDeployment)
}

func BenchmarkCompareDeploymentJQRule(b *testing.B) {
	benchmarkRules(b, []RuleSpec{{JQPathExpressions: []string{`.spec.template.spec.containers[] | select(.name == "web") | .image`}}}, liveDeployment)
}

func BenchmarkCompareDeploymentManagedFieldsRule(b *testing.B) {
	benchmarkRules(b, []RuleSpec{{ManagedFieldsManagers: []string{"kube-controller-manager", "image-updater"}}}, managedLive)
}
