package source_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/sourceserver"
)

func startMinIO(t *testing.T) *sourceserver.MinIO {
	t.Helper()
	m, err := sourceserver.StartMinIO(filepath.Join(devenv.DefaultBinDir(), "minio"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

func bucketRequest(m *sourceserver.MinIO, prefix string) source.Request {
	return source.Request{Kind: source.SourceBucket, URL: "http://" + m.Endpoint() + "/manifests/" + prefix,
		Artifact: &source.ArtifactSource{Endpoint: m.Endpoint(), Bucket: "manifests", Prefix: prefix, Insecure: true, Field: "spec.bucket",
			Credentials: &source.Credentials{AccessKey: m.AccessKey, SecretKey: m.SecretKey, Secret: "Secret infra/s3 (spec.bucket.secretRef)"}}}
}

func TestBucket(t *testing.T) {
	ctx := context.Background()
	m := startMinIO(t)
	if err := m.MakeBucket(ctx, "manifests"); err != nil {
		t.Fatal(err)
	}
	for key, c := range map[string]string{"apps/cm.yaml": cm("cm", "one"), "apps/sub/other.yaml": cm("other", "x"), "elsewhere/x.yaml": cm("x", "x")} {
		if err := m.Put(ctx, "manifests", key, c); err != nil {
			t.Fatal(err)
		}
	}
	f := newFetcher(t)
	req := bucketRequest(m, "apps")
	rev, snap, err := f.Fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rev, "sha256:") || len(snap.Objects) != 2 || value(t, snap, "cm") != "one" {
		t.Fatalf("revision %s, %d objects", rev, len(snap.Objects))
	}
	if src := snap.Objects[0].Source; src.Path != "apps/cm.yaml" || src.Line != 1 || src.Revision != rev || src.URL != req.URL {
		t.Fatalf("source %+v", src)
	}

	// Unchanged: one listing.
	n := len(m.Requests())
	if rev2, snap2, err := f.Fetch(ctx, req); err != nil || rev2 != rev || snap2 != snap {
		t.Fatalf("unchanged: %s %v", rev2, err)
	}
	if got := m.Since(n); strings.Join(got, ",") != "GET /manifests/" {
		t.Fatalf("requests of an unchanged fetch: %q", got)
	}

	// One object changes: only it is downloaded.
	if err := m.Put(ctx, "manifests", "apps/cm.yaml", cm("cm", "two")); err != nil {
		t.Fatal(err)
	}
	n = len(m.Requests())
	rev3, snap3, err := f.Fetch(ctx, req)
	if err != nil || rev3 == rev || value(t, snap3, "cm") != "two" || value(t, snap3, "other") != "x" {
		t.Fatalf("after a change: %s %v", rev3, err)
	}
	if got := m.Since(n); strings.Join(got, ",") != "GET /manifests/,GET /manifests/apps/cm.yaml" {
		t.Fatalf("requests after one object changed: %q", got)
	}

	// A manifest that does not parse: a render error naming the object.
	if err := m.Put(ctx, "manifests", "apps/bad.yaml", "kind: [\n"); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.Fetch(ctx, req)
	var re *render.RenderError
	if !errors.As(err, &re) || re.Path != "apps/bad.yaml" {
		t.Fatalf("bad manifest: %v", err)
	}

	// Wrong credentials name the Secret.
	bad := bucketRequest(m, "apps")
	bad.Artifact.Credentials.SecretKey = "wrong-secret-key"
	if _, _, err := f.Fetch(ctx, bad); err == nil || !strings.Contains(err.Error(), "check the credentials in Secret infra/s3 (spec.bucket.secretRef)") || strings.Contains(err.Error(), "wrong-secret-key") {
		t.Fatalf("wrong credentials: %v", err)
	}
}
