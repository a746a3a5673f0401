package source

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/render/sopstest"
)

// TestRenderCacheKeyedBySettings: a snapshot rendered for one Guard
// (SOPS-decrypted with its key, substituted with its variables) is never
// handed to a Guard of the same source with other keys or variables: that
// one renders the revision itself. Equal settings share the snapshot.
func TestRenderCacheKeyedBySettings(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("shared")
	if err != nil {
		t.Fatal(err)
	}
	keyA, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: shop\nstringData:\n  password: only-for-a\n"),
		sopstest.Options{EncryptedRegex: "^(data|stringData)$"}, keyA.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	mustPush(t, repo, map[string]string{
		"vars/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: shop\ndata:\n  token: ${TOKEN}\n",
		"sops/secret.yaml": string(secret),
	}, "first")
	url := gs.url("shared")
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	value := func(s *render.Snapshot, kind, name, field, key string) string {
		t.Helper()
		o, ok := s.Get(render.ObjectKey{Kind: kind, Namespace: "shop", Name: name})
		if !ok {
			t.Fatalf("no %s %s in the snapshot", kind, name)
		}
		v, _ := o.Obj().Object[field].(map[string]any)[key].(string)
		return v
	}

	// Guard A fills the cache.
	if _, s, err := f.Fetch(t.Context(), Request{URL: url, Path: "vars", Render: render.RenderOptions{Vars: map[string]string{"TOKEN": "secret-of-a"}}}); err != nil || value(s, "ConfigMap", "cfg", "data", "token") != "secret-of-a" {
		t.Fatalf("guard A, vars: %v", err)
	}
	if _, s, err := f.Fetch(t.Context(), Request{URL: url, Path: "sops", Render: render.RenderOptions{AgeKeys: []string{keyA.Identity}}}); err != nil || value(s, "Secret", "db", "stringData", "password") != "only-for-a" {
		t.Fatalf("guard A, sops: %v", err)
	}

	for _, tt := range []struct {
		name    string
		path    string
		opts    render.RenderOptions
		want    string // the value rendered; "" for a render error
		kind    string
		obj     string
		field   string
		dataKey string
	}{
		{"other variables", "vars", render.RenderOptions{Vars: map[string]string{"TOKEN": "b"}}, "b", "ConfigMap", "cfg", "data", "token"},
		{"substitution off", "vars", render.RenderOptions{}, "${TOKEN}", "ConfigMap", "cfg", "data", "token"},
		{"equal variables", "vars", render.RenderOptions{Vars: map[string]string{"TOKEN": "secret-of-a"}}, "secret-of-a", "ConfigMap", "cfg", "data", "token"},
		{"another key", "sops", render.RenderOptions{AgeKeys: []string{keyB.Identity}}, "", "", "", "", ""},
		{"no key", "sops", render.RenderOptions{}, "", "", "", "", ""},
		{"the same key", "sops", render.RenderOptions{AgeKeys: []string{keyA.Identity}}, "only-for-a", "Secret", "db", "stringData", "password"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, s, err := f.Fetch(t.Context(), Request{URL: url, Path: tt.path, Render: tt.opts})
			if tt.want == "" {
				var re *render.RenderError
				if !errors.As(err, &re) || s != nil {
					t.Fatalf("fetch = %v; want a render error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := value(s, tt.kind, tt.obj, tt.field, tt.dataKey); got != tt.want {
				t.Fatalf("%s = %q, want %q", tt.dataKey, got, tt.want)
			}
		})
	}
}
