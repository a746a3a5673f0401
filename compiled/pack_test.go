package compiled

import (
	"maps"
	"strings"
	"testing"
)

func TestPackEntries(t *testing.T) {
	entries := map[string]string{
		Key("", "configmaps", "cm-0001"):                                  "deny||shop|a.yaml:1",
		Key("", "configmaps", "cm-0011"):                                  "deny|s0123456789|shop|a.yaml:9",
		Key("", "configmaps", "web"):                                      "warn||shop|b.yaml:1",
		Key("rbac.authorization.k8s.io", "clusterroles", "system:reader"): "deny||ops|rbac.yaml:1",
		Key("apps", "deployments", "Api_v2"):                              "deny||shop|d.yaml:1",
		guardKey("shop"):                                                  "9f2c1e0|https://git.example/infra.git",
		shapeKeyPrefix + "s0123456789":                                    `{"Paths":[["data","x"]]}`,
	}
	data := PackEntries(entries)
	for k, want := range map[string]string{
		"configmaps._1": "\ncm-0001=deny||shop|a.yaml:1\ncm-0011=deny|s0123456789|shop|a.yaml:9\n",
		"configmaps._b": "\nweb=warn||shop|b.yaml:1\n",
		"clusterroles.rbac.authorization.k8s.io_r": "\nsystem:reader=deny||ops|rbac.yaml:1\n",
		"deployments.apps_2":                       "\nApi_v2=deny||shop|d.yaml:1\n",
		"guard.shop":                               "9f2c1e0|https://git.example/infra.git",
		shapeKeyPrefix + "s0123456789":             `{"Paths":[["data","x"]]}`,
	} {
		if data[k] != want {
			t.Errorf("data[%q] = %q, want %q", k, data[k], want)
		}
	}
	if len(data) != 6 {
		t.Errorf("%d keys, want 6: %v", len(data), data)
	}
	if got := Entries(data); !maps.Equal(got, entries) {
		t.Errorf("Entries(PackEntries(e)) = %v, want %v", got, entries)
	}
}

// A line of a bucket that is not the bucket's (another bucket's name, a
// name the index never holds) is not read back as an entry.
func TestEntriesSkipForeignLines(t *testing.T) {
	got := Entries(map[string]string{"configmaps._1": "\ncm-1=deny||g|a.yaml:1\nother-2=deny||g|a.yaml:1\nbad name1=deny||g|x:1\nno-separator1\n"})
	if want := map[string]string{Key("", "configmaps", "cm-1"): "deny||g|a.yaml:1"}; !maps.Equal(got, want) {
		t.Errorf("Entries = %v, want %v", got, want)
	}
}

func TestBucketChar(t *testing.T) {
	for name, want := range map[string]string{"a": "a", "cm-7": "7", "x.": ".", "x-": "-", "Web": "b", "a_": "_", "system:x:": "_", "é": "_", "": "_"} {
		if got := bucketChar(name); got != want {
			t.Errorf("bucketChar(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestPackable(t *testing.T) {
	for name, want := range map[string]bool{"cm-1": true, "system:controller:x": true, "a_b": true, "user@example.com": true, "": false, "a=b": false, "a\nb": false, "a b": false, "é": false, "a|b": false} {
		if got := packable(name); got != want {
			t.Errorf("packable(%q) = %v, want %v", name, got, want)
		}
	}
}

// A Git committer names files: a path holding a line end and "name=" must
// not become another object's entry in the bucket.
func TestEscapedPathCannotForgeEntries(t *testing.T) {
	path := escape("a.yaml\nvictor=off||g|x.yaml")
	data := PackEntries(map[string]string{
		Key("", "configmaps", "attacker"): "deny||g|" + path + ":1",
		Key("", "configmaps", "victor"):   "deny||h|v.yaml:1",
	})
	bucket := data["configmaps._r"]
	if strings.Count(bucket, "\nvictor=") != 1 {
		t.Fatalf("bucket r holds a forged victor line: %q", bucket)
	}
	if got := Entries(data)[Key("", "configmaps", "victor")]; got != "deny||h|v.yaml:1" {
		t.Errorf("victor's entry = %q", got)
	}
	if d, ok := ParseDenial("changes to objects managed by Git are not allowed: configmaps/attacker comes from " + path + ":1 in u at revision r (Guard g); change it there (delete)"); !ok || d.Path != "a.yaml\nvictor=off||g|x.yaml" {
		t.Errorf("ParseDenial: %+v %v", d, ok)
	}
}
