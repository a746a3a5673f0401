package compiled

import (
	"reflect"
	"testing"
)

func TestParseDenial(t *testing.T) {
	const head = "changes to objects managed by Git "
	for _, tc := range []struct {
		name, message string
		want          Denial
		ok            bool
	}{
		{"an update", head + "are not allowed: configmaps/settings comes from config/settings.yaml:1 in https://git.example/shop.git at revision 69c4415 (Guard shop); change it there (changed: data, metadata.labels)",
			Denial{Mode: "deny", Resource: "configmaps", Name: "settings", Path: "config/settings.yaml", Line: 1, URL: "https://git.example/shop.git", Revision: "69c4415", Guard: "shop", Changed: []string{"data", "metadata.labels"}}, true},
		{"a delete in warn mode", head + "are reverted by the guard: deployments/web comes from apps/web.yaml:3 in https://git.example/shop.git at revision 69c4415 (Guard shop); change it there (delete)",
			Denial{Mode: "warn", Resource: "deployments", Name: "web", Path: "apps/web.yaml", Line: 3, URL: "https://git.example/shop.git", Revision: "69c4415", Guard: "shop", Delete: true}, true},
		{"a scale write", head + "are not allowed: deployments/web comes from apps/web.yaml:1 in u at revision r (Guard shop); change it there (scale 2 to 5)",
			Denial{Mode: "deny", Resource: "deployments", Name: "web", Path: "apps/web.yaml", Line: 1, URL: "u", Revision: "r", Guard: "shop", Scale: true, OldReplicas: 2, Replicas: 5}, true},
		{"an escaped path", head + "are not allowed: configmaps/a comes from odd%7Cname%25.yaml:2 in u at revision r (Guard g); change it there (changed: data)",
			Denial{Mode: "deny", Resource: "configmaps", Name: "a", Path: "odd|name%.yaml", Line: 2, URL: "u", Revision: "r", Guard: "g", Changed: []string{"data"}}, true},
		{"another policy's message", "this ConfigMap is driftguard's index", Denial{}, false},
		{"a forged tail", head + "are not allowed: configmaps/a comes from f.yaml:x in u at revision r (Guard g); change it there", Denial{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseDenial(tc.message)
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseDenial = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
