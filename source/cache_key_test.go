package source

import (
	"testing"

	"github.com/go-logr/logr"
)

// TestCacheKeyedByCredentials: a Guard without the credentials of a private
// repository gets nothing of it from the caches another Guard filled with
// them, whatever it pins; it fetches itself and the server refuses it. A
// Guard with the same credentials shares the cache.
func TestCacheKeyedByCredentials(t *testing.T) {
	gs, repo, url := privateRepo(t)
	first := mustPush(t, repo, map[string]string{"apps/cm.yaml": configMap("first"), "policies/p.rego": "package driftguard\n"}, "first")
	head := mustPush(t, repo, map[string]string{"apps/cm.yaml": configMap("head")}, "second")
	owner := &Auth{Username: "deploy", Password: "s3cret"}

	f := NewGitFetcher(t.TempDir(), logr.Discard())
	for _, ref := range []string{first, "main"} {
		if _, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: ref, Path: "apps", Auth: owner}); err != nil || len(snap.Objects) != 1 {
			t.Fatalf("fetch %s with the credentials: %v", ref, err)
		}
	}

	for _, tt := range []struct {
		name string
		req  Request
	}{
		{"no credentials, the commit pinned", Request{URL: url, Ref: first, Path: "apps"}},
		{"no credentials, the head pinned", Request{URL: url, Ref: head, Path: "apps"}},
		{"no credentials, another path", Request{URL: url, Ref: first, Path: "."}},
		{"wrong password", Request{URL: url, Ref: first, Path: "apps", Auth: &Auth{Username: "deploy", Password: "guess"}}},
		{"a bearer token", Request{URL: url, Ref: first, Path: "apps", Auth: &Auth{BearerToken: "s3cret"}}},
		{"the user name alone", Request{URL: url, Ref: head, Path: "apps", Auth: &Auth{Username: "deploy"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			packs := gs.packs.Load()
			rev, snap, err := f.Fetch(t.Context(), tt.req)
			if err == nil || snap != nil {
				t.Fatalf("fetch = %s, %d objects, %v; want the server's refusal", rev, len(snap.Objects), err)
			}
			if !IsAuthError(err) {
				t.Fatalf("error %v is not the server's refusal", err)
			}
			if gs.packs.Load() != packs {
				t.Fatal("objects were sent without the credentials")
			}
			if files, err := f.Files(tt.req, first, "policies", func(string) bool { return true }); err == nil {
				t.Fatalf("Files without the credentials = %v", files)
			}
		})
	}

	t.Run("the same credentials share the cache", func(t *testing.T) {
		packs := gs.packs.Load()
		same := &Auth{Username: "deploy", Password: "s3cret"}
		_, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: first, Path: "apps", Auth: same})
		if err != nil || snap.Objects[0].Key.Name != "first" {
			t.Fatalf("fetch with equal credentials: %v", err)
		}
		if gs.packs.Load() != packs {
			t.Fatal("a cached commit was fetched again")
		}
		files, err := f.Files(Request{URL: url, Auth: same}, first, "policies", func(string) bool { return true })
		if err != nil || files["policies/p.rego"] == "" {
			t.Fatalf("Files = %v, %v", files, err)
		}
	})
}

func TestCacheKey(t *testing.T) {
	base := Request{URL: "https://git.example/infra.git", Ref: "main", Path: "apps"}
	key := base.CacheKey()
	with := func(f func(*Request)) string {
		r := base
		f(&r)
		return r.CacheKey()
	}
	art := func(a ArtifactSource) func(*Request) {
		return func(r *Request) { r.Kind, r.Artifact = SourceOCI, &a }
	}
	for _, tt := range []struct {
		name string
		key  string
		same bool
	}{
		{"another ref, path and render options", with(func(r *Request) { r.Ref, r.Path, r.Render.Vars = "dev", ".", map[string]string{"a": "b"} }), true},
		{"the Git kind named", with(func(r *Request) { r.Kind = SourceGit }), true},
		{"another URL", with(func(r *Request) { r.URL += "/" }), false},
		{"credentials in the URL", with(func(r *Request) { r.URL = "https://u:p@git.example/infra.git" }), false},
		{"a password", with(func(r *Request) { r.Auth = &Auth{Username: "u", Password: "p"} }), false},
		{"fields run together", with(func(r *Request) { r.Auth = &Auth{Username: "up"} }), false},
		{"an SSH key", with(func(r *Request) { r.Auth = &Auth{SSHKey: []byte("k"), KnownHosts: []byte("h")} }), false},
		{"another kind", with(func(r *Request) { r.Kind = SourceOCI }), false},
		{"an anonymous artifact", with(art(ArtifactSource{})), false},
		{"artifact credentials", with(art(ArtifactSource{Credentials: &Credentials{Username: "u", Password: "p"}})), false},
		{"a docker config", with(art(ArtifactSource{Credentials: &Credentials{DockerConfig: []byte("{}")}})), false},
		{"insecure", with(art(ArtifactSource{Insecure: true})), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.key == key) != tt.same {
				t.Fatalf("key equal to the base's: %v, want %v", tt.key == key, tt.same)
			}
		})
	}
	one, other := &Auth{Username: "u", Password: "p"}, &Auth{Username: "u", Password: "p"}
	if with(func(r *Request) { r.Auth = one }) != with(func(r *Request) { r.Auth = other }) {
		t.Fatal("equal credentials have different keys")
	}
	if with(art(ArtifactSource{Credentials: &Credentials{Username: "u", Password: "p", Secret: "Secret a"}})) !=
		with(art(ArtifactSource{Credentials: &Credentials{Username: "u", Password: "p", Secret: "Secret b"}})) {
		t.Fatal("the Secret's name changed the key: equal credentials from two Secrets share a cache")
	}
}
