package drift

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestAdditions(t *testing.T) {
	desired := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},
"spec":{"template":{"spec":{"automountServiceAccountToken":false,"containers":[{"name":"web","image":"web:1"}]}}}}`)
	entry := func(manager, sub, fields string) map[string]any {
		e := map[string]any{"manager": manager, "operation": "Update", "fieldsV1": fields}
		if sub != "" {
			e["subresource"] = sub
		}
		return e
	}
	live := func(extra string, entries ...map[string]any) map[string]any {
		l := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"},"annotations":{}},
"spec":{"template":{"spec":{"automountServiceAccountToken":false,"containers":[{"name":"web","image":"web:1"}]}}}}`)
		if extra != "" {
			var patch map[string]any
			if err := json.Unmarshal([]byte(extra), &patch); err != nil {
				t.Fatal(err)
			}
			mergeInto(l, JSONNumbers(patch).(map[string]any))
		}
		list := make([]any, len(entries))
		for i, e := range entries {
			list[i] = e
		}
		l["metadata"].(map[string]any)["managedFields"] = list
		return l
	}
	guard := entry("driftguard", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)
	at := func(e map[string]any, t string) map[string]any { e["time"] = t; return e }
	sidecar := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1"},{"name":"tap","image":"evil"}]}}}}`
	sidecarFields := `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"tap\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`
	personAt := time.Date(2026, 12, 5, 10, 0, 5, 0, time.UTC)
	type by struct {
		manager string
		since   time.Time
	}
	tests := []struct {
		name  string
		live  map[string]any
		rules []RuleSpec
		by    by // Options.Borrowed and BorrowedSince
		want  []string
	}{
		{"nothing added", live("", guard), nil, by{}, nil},
		{"hostNetwork by kubectl", live(`{"spec":{"template":{"spec":{"hostNetwork":true}}}}`, guard,
			entry("kubectl-patch", "", `{"f:spec":{"f:template":{"f:spec":{"f:hostNetwork":{}}}}}`)), nil, by{},
			[]string{"/spec/template/spec/hostNetwork"}},
		{"sidecar container, second in the list", live(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1"},{"name":"tap","image":"evil"}]}}}}`, guard,
			entry("kubectl-edit", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"tap\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)), nil, by{},
			[]string{"/spec/template/spec/containers/1"}},
		{"field added in a Git container", live(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1","command":["sh"]}]}}}}`, guard,
			entry("kubectl-edit", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:command":{}}}}}}}`)), nil, by{},
			[]string{"/spec/template/spec/containers/0/command"}},
		{"owner reference beside the controller's", live(`{"metadata":{"ownerReferences":[{"uid":"a","name":"rs"},{"uid":"b","name":"mine"}]}}`, guard,
			entry("kube-controller-manager", "", `{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"a\"}":{}}}}`),
			entry("evil", "", `{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"b\"}":{}}}}`)), nil, by{},
			[]string{"/metadata/ownerReferences/1"}},
		{"finalizer", live(`{"metadata":{"finalizers":["x/y"]}}`, guard,
			entry("kubectl-patch", "", `{"f:metadata":{"f:finalizers":{".":{},"v:\"x/y\"":{}}}}`)), nil, by{},
			[]string{"/metadata/finalizers/0"}},
		{"annotation, stamp and last-applied", live(`{"metadata":{"annotations":{"team":"x","driftguard.io/changed-by":"{}","kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`, guard,
			entry("kubectl-annotate", "", `{"f:metadata":{"f:annotations":{".":{},"f:team":{},"f:driftguard.io/changed-by":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)), nil, by{},
			[]string{"/metadata/annotations/team"}},
		{"control plane and subresources are not additions", live(`{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"1"}},"spec":{"replicas":4},"status":{"replicas":4}}`, guard,
			entry("kube-controller-manager", "", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`),
			entry("kube-controller-manager", "status", `{"f:status":{"f:replicas":{}}}`),
			entry("alice-scaler", "scale", `{"f:spec":{"f:replicas":{}}}`)), nil, by{}, nil},
		{"a manager an ignore rule names", live(`{"spec":{"template":{"spec":{"hostNetwork":true}}}}`, guard,
			entry("tuner", "", `{"f:spec":{"f:template":{"f:spec":{"f:hostNetwork":{}}}}}`)), []RuleSpec{{ManagedFieldsManagers: []string{"tuner"}}}, by{}, nil},
		{"a path an ignore rule hides", live(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1","command":["sh"]}]}}}}`, guard,
			entry("kubectl-edit", "", `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:command":{}}}}}}}`)),
			[]RuleSpec{{JSONPointers: []string{"/spec/template/spec/containers/0/command"}}}, by{}, nil},
		{"removed automount is no addition (Compare sees it)", live(`{"spec":{"template":{"spec":{"automountServiceAccountToken":null}}}}`, guard), nil, by{}, nil},
		{"the kubelet's name, written by a verified person", live(sidecar, guard, at(entry("kubelet", "", sidecarFields), "2026-12-05T10:00:05Z")), nil, by{"kubelet", personAt},
			[]string{"/spec/template/spec/containers/1"}},
		{"the guard's name, written by a verified person", live(sidecar, at(entry("driftguard", "", sidecarFields), "2026-12-05T10:00:05Z")), nil, by{"driftguard", personAt},
			[]string{"/spec/template/spec/containers/1"}},
		{"the kubelet's name, before the person's write", live(sidecar, guard, at(entry("kubelet", "", sidecarFields), "2026-12-05T10:00:02Z")), nil, by{"kubelet", personAt}, nil},
		// The controller manager's own write in the same second: the
		// person named another manager.
		{"another control-plane name in the same second", live(`{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"2"}}}`, guard,
			at(entry("kube-controller-manager", "", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`), "2026-12-05T10:00:05Z")), nil, by{"kubelet", personAt}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts Options
			if tt.rules != nil {
				rules, err := CompileRules(tt.rules)
				if err != nil {
					t.Fatal(err)
				}
				opts = For(rules, "", "", "", "", tt.live)
			}
			opts.Borrowed, opts.BorrowedSince = tt.by.manager, tt.by.since
			got := Paths(Additions(desired, tt.live, "driftguard", opts))
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Additions = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestComparePathsOrdersIndicesByNumber(t *testing.T) {
	if comparePaths("/a/10", "/a/2") <= 0 || comparePaths("/a/1/b", "/a/1") <= 0 || comparePaths("/a/b", "/a/c") >= 0 {
		t.Fatal("comparePaths order")
	}
}

// mergeInto merges patch into m (objects recursively, the rest replaced).
func mergeInto(m, patch map[string]any) {
	for k, v := range patch {
		pm, ok := v.(map[string]any)
		if mm, ok2 := m[k].(map[string]any); ok && ok2 {
			mergeInto(mm, pm)
			continue
		}
		if v == nil {
			delete(m, k)
			continue
		}
		m[k] = v
	}
}

// TestAdditionsKeyDefaults: a list element whose managedFields key holds a
// defaulted key field (a port's protocol) is Git's element where Git leaves
// that field to its default.
func TestAdditionsKeyDefaults(t *testing.T) {
	desired := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1","ports":[{"containerPort":80}]}]}}}}`)
	live := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
"spec":{"template":{"spec":{"containers":[{"name":"web","image":"web:1","ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":81,"protocol":"TCP"}]}]}}}}`)
	live["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "kubectl-client-side-apply", "operation": "Update",
		"fieldsV1": `{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{"f:ports":{".":{},` +
			`"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}},` +
			`"k:{\"containerPort\":81,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}`}}
	got := Paths(Additions(desired, live, "driftguard", Options{}))
	if want := []string{"/spec/template/spec/containers/0/ports/1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Additions = %v, want %v", got, want)
	}
}
