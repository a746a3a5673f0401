package source_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/source"
)

// TestCachesKeyedByCredentials: a Guard without the credentials of a
// private artifact gets nothing of it from what another Guard's fetch left
// in the caches (rendered snapshots, layers kept by digest), whatever it
// pins: it asks the registry itself and is refused. A Guard with equal
// credentials shares them.
func TestCachesKeyedByCredentials(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	reg.SetAuth("robot", "s3cret")
	digest, err := reg.PushFiles(ctx, "app", "v1", map[string]string{"cm.yaml": cm("cm", "private"), "policies/p.rego": "package driftguard\n"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := source.New(source.NewGitFetcher(filepath.Join(dir, "git"), logr.Discard()), filepath.Join(dir, "artifacts"), logr.Discard())
	owner := func() *source.Credentials {
		return &source.Credentials{Username: "robot", Password: "s3cret", Secret: "Secret infra/a (spec.oci.secretRef)"}
	}
	req := ociRequest(reg, "app", "v1")
	req.Artifact.Credentials = owner()
	rev, snap, err := f.Fetch(ctx, req)
	if err != nil || value(t, snap, "cm") != "private" {
		t.Fatalf("fetch with the credentials: %v", err)
	}

	for _, tt := range []struct {
		name  string
		ref   string
		path  string
		creds *source.Credentials
	}{
		{"no credentials, the digest pinned", digest, "", nil},
		{"no credentials, the revision pinned", rev, "", nil},
		{"no credentials, the tag", "v1", "", nil},
		{"no credentials, another path", digest, "policies", nil},
		{"wrong password, the digest pinned", digest, "", &source.Credentials{Username: "robot", Password: "guess", Secret: "Secret other/b (spec.oci.secretRef)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := ociRequest(reg, "app", tt.ref)
			req.Path, req.Artifact.Credentials = tt.path, tt.creds
			before := len(reg.Front.Requests())
			rev, snap, err := f.Fetch(ctx, req)
			if err == nil || snap != nil {
				t.Fatalf("fetch = %s, %v; want the registry's refusal", rev, err)
			}
			if !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "UNAUTHORIZED") {
				t.Fatalf("error %v is not the registry's refusal", err)
			}
			if len(reg.Front.Requests()) == before {
				t.Fatal("the registry was not asked")
			}
			if files, err := f.Files(req, digest, "policies", func(string) bool { return true }); err == nil {
				t.Fatalf("Files without the credentials = %v", files)
			}
		})
	}

	t.Run("equal credentials share the caches", func(t *testing.T) {
		req := ociRequest(reg, "app", digest)
		req.Artifact.Credentials = owner()
		req.Artifact.Credentials.Secret = "Secret infra/c (spec.oci.secretRef)"
		if _, snap, err := f.Fetch(ctx, req); err != nil || value(t, snap, "cm") != "private" {
			t.Fatalf("fetch with equal credentials: %v", err)
		}
	})
}
