package compiled

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The canary's token changes with every index and only with them: the
// keeper asks the API server for it after each change of an index.
func TestCanaryToken(t *testing.T) {
	c := Config{Name: "dg", Namespace: "dg-system"}
	index := func(ns, entry string) client.Object {
		return c.indexConfigMap(ns, map[string]string{Key("", "configmaps", "settings"): entry})
	}
	policies, _ := c.Policies()
	token := func(objects ...client.Object) string {
		t.Helper()
		digests := make([]string, len(objects))
		for i, o := range objects {
			d, err := digestOf(o)
			if err != nil {
				t.Fatal(err)
			}
			digests[i] = d
		}
		cm := c.canaryConfigMap(objects, digests)
		if cm.Name != c.CanaryName() || cm.Namespace != c.Namespace || !c.isCanary(cm) {
			t.Fatalf("canary %s/%s", cm.Namespace, cm.Name)
		}
		return cm.Data[canaryKey]
	}
	base := token(index("shop", "deny||shop|a.yaml:1"), index("", ""))
	for _, tc := range []struct {
		name    string
		objects []client.Object
		same    bool
	}{
		{"the same indexes", []client.Object{index("shop", "deny||shop|a.yaml:1"), index("", "")}, true},
		{"the same indexes and a policy", []client.Object{policies[0], index("shop", "deny||shop|a.yaml:1"), index("", "")}, true},
		{"an entry changed", []client.Object{index("shop", "warn||shop|a.yaml:1"), index("", "")}, false},
		{"an index more", []client.Object{index("shop", "deny||shop|a.yaml:1"), index("", ""), index("web", "")}, false},
		{"an index less", []client.Object{index("shop", "deny||shop|a.yaml:1")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := token(tc.objects...); (got == base) != tc.same {
				t.Errorf("token %s, base %s: same %v, want %v", got, base, got == base, tc.same)
			}
		})
	}
	if c.isCanary(&corev1.ConfigMap{}) {
		t.Error("an unnamed ConfigMap is the canary")
	}
}
