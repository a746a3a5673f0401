package source_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/sourceserver"
)

func newFetcher(t *testing.T) *source.Fetcher {
	t.Helper()
	dir := t.TempDir()
	return source.New(source.NewGitFetcher(filepath.Join(dir, "git"), logr.Discard()), filepath.Join(dir, "artifacts"), logr.Discard())
}

func cm(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: demo\ndata:\n  value: " + value + "\n"
}

func value(t *testing.T, snap *render.Snapshot, name string) string {
	t.Helper()
	for _, o := range snap.Objects {
		if o.Key.Name == name {
			v, _ := o.Obj().Object["data"].(map[string]any)["value"].(string)
			return v
		}
	}
	t.Fatalf("no object %s in the snapshot", name)
	return ""
}

func startRegistry(t *testing.T) *sourceserver.Registry {
	t.Helper()
	reg, err := sourceserver.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	return reg
}

func ociRequest(reg *sourceserver.Registry, repo, ref string) source.Request {
	return source.Request{Kind: source.SourceOCI, URL: reg.URL(repo), Ref: ref,
		Artifact: &source.ArtifactSource{Insecure: true, Field: "spec.oci"}}
}

func TestOCIArtifactFetchesOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	f := newFetcher(t)
	d1, err := reg.PushFiles(ctx, "app", "v1", map[string]string{"cm.yaml": cm("cm", "one"), "sub/other.yaml": cm("other", "x")})
	if err != nil {
		t.Fatal(err)
	}
	req := ociRequest(reg, "app", "v1")
	rev, snap, err := f.Fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if rev != "v1@"+d1 || value(t, snap, "cm") != "one" || len(snap.Objects) != 2 {
		t.Fatalf("revision %s, %d objects", rev, len(snap.Objects))
	}
	src := snap.Objects[0].Source
	if src.URL != reg.URL("app") || src.Revision != rev || src.Path != "cm.yaml" || src.Line != 1 {
		t.Fatalf("source %+v", src)
	}

	// Unchanged: one manifest HEAD, the same snapshot, nothing rendered.
	n := len(reg.Requests())
	rev2, snap2, err := f.Fetch(ctx, req)
	if err != nil || rev2 != rev || snap2 != snap {
		t.Fatalf("unchanged fetch: %s %v (same snapshot: %t)", rev2, err, snap2 == snap)
	}
	if got := reg.Since(n); strings.Join(got, ",") != "HEAD /v2/app/manifests/v1" {
		t.Fatalf("requests of an unchanged fetch: %q", got)
	}

	// New options: rendered again from the kept layer, no blob download.
	n = len(reg.Requests())
	opts := req
	opts.Path = "sub"
	if _, snap3, err := f.Fetch(ctx, opts); err != nil || len(snap3.Objects) != 1 || value(t, snap3, "other") != "x" {
		t.Fatalf("path sub: %v", err)
	}
	for _, r := range reg.Since(n) {
		if strings.Contains(r, "/blobs/") {
			t.Fatalf("kept layer downloaded again: %q", reg.Since(n))
		}
	}

	// The tag moves: the new content.
	d2, err := reg.PushFiles(ctx, "app", "v1", map[string]string{"cm.yaml": cm("cm", "two")})
	if err != nil {
		t.Fatal(err)
	}
	rev, snap, err = f.Fetch(ctx, req)
	if err != nil || rev != "v1@"+d2 || value(t, snap, "cm") != "two" {
		t.Fatalf("after push: %s %v", rev, err)
	}

	// A revision fetched before, by its digest: no tag lookup.
	n = len(reg.Requests())
	pinned := req
	pinned.Ref = "v1@" + d1
	rev, snap, err = f.Fetch(ctx, pinned)
	if err != nil || rev != "v1@"+d1 || value(t, snap, "cm") != "one" {
		t.Fatalf("pinned: %s %v", rev, err)
	}
	for _, r := range reg.Since(n) {
		if strings.HasPrefix(r, "HEAD") {
			t.Fatalf("pinned revision asked the tag: %q", reg.Since(n))
		}
	}
}

func TestOCISemverAndDigest(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	f := newFetcher(t)
	digests := map[string]string{}
	for _, tag := range []string{"1.0.0", "1.2.0", "2.0.0", "latest"} {
		d, err := reg.PushFiles(ctx, "app", tag, map[string]string{"cm.yaml": cm("cm", tag)})
		if err != nil {
			t.Fatal(err)
		}
		digests[tag] = d
	}
	tests := []struct {
		name, ref, semver string
		wantRev, want     string
		wantErr           string
	}{
		{"highest tag in range", "", "^1", "1.2.0@" + digests["1.2.0"], "1.2.0", ""},
		{"latest by default", "", "", "latest@" + digests["latest"], "latest", ""},
		{"a digest", digests["1.0.0"], "", digests["1.0.0"], "1.0.0", ""},
		{"no tag in range", "", ">=3", "", "", `no tag matches semver range ">=3"; newest: 2.0.0, 1.2.0, 1.0.0`},
		{"missing tag", "9.9.9", "", "", "", "tag 9.9.9: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ociRequest(reg, "app", tt.ref)
			req.SemVer = tt.semver
			rev, snap, err := f.Fetch(ctx, req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || rev != tt.wantRev || value(t, snap, "cm") != tt.want {
				t.Fatalf("got %s %v, want %s", rev, err, tt.wantRev)
			}
		})
	}
}

func TestOCIPlainHTTPOnlyWhenAsked(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	if _, err := reg.PushFiles(ctx, "app", "v1", map[string]string{"cm.yaml": cm("cm", "one")}); err != nil {
		t.Fatal(err)
	}
	req := ociRequest(reg, "app", "v1")
	req.Artifact.Insecure = false
	_, _, err := newFetcher(t).Fetch(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "set spec.oci.insecure to true") {
		t.Fatalf("err = %v", err)
	}
}

func TestOCIAuthNamesTheSecret(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	reg.SetAuth("robot", "s3cret")
	if _, err := reg.PushFiles(ctx, "app", "v1", map[string]string{"cm.yaml": cm("cm", "one")}); err != nil {
		t.Fatal(err)
	}
	const from = "Secret infra/registry (spec.oci.secretRef)"
	tests := []struct {
		name    string
		creds   *source.Credentials
		wantErr string
	}{
		{"no credentials", nil, "the registry needs credentials: name a Secret in spec.oci.secretRef"},
		{"wrong password", &source.Credentials{Username: "robot", Password: "wrong", Secret: from}, "check the credentials in " + from},
		{"right password", &source.Credentials{Username: "robot", Password: "s3cret", Secret: from}, ""},
		{"docker config", &source.Credentials{DockerConfig: []byte(`{"auths":{"` + reg.Addr() + `":{"username":"robot","password":"s3cret"}}}`), Secret: from}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ociRequest(reg, "app", "v1")
			req.Artifact.Credentials = tt.creds
			_, _, err := newFetcher(t).Fetch(ctx, req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "wrong") {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestOCICorruptArtifactNamesIt(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	d, err := reg.PushCorrupt(ctx, "app", "bad")
	if err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t)
	rev, snap, err := f.Fetch(ctx, ociRequest(reg, "app", "bad"))
	var re *render.RenderError
	if !errors.As(err, &re) || snap != nil || rev != "bad@"+d {
		t.Fatalf("got %s %v, want a render error", rev, err)
	}
	if re.Path != reg.URL("app")+":bad@"+d || !strings.Contains(err.Error(), "not a gzip archive") {
		t.Fatalf("err = %v (path %s)", err, re.Path)
	}
	// The same revision is not downloaded again.
	n := len(reg.Requests())
	if _, _, err2 := f.Fetch(ctx, ociRequest(reg, "app", "bad")); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second fetch: %v", err2)
	}
	if got := reg.Since(n); len(got) != 1 {
		t.Fatalf("requests: %q", got)
	}
}

func TestPackageIsReproducible(t *testing.T) {
	dir := t.TempDir()
	for p, c := range map[string]string{"a.yaml": "a: 1\n", "sub/b.yaml": "b: 2\n", ".git/config": "[core]\n"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var a, b strings.Builder
	if err := source.Package(dir, &a); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, "a.yaml"), timeZero, timeZero); err != nil {
		t.Fatal(err)
	}
	if err := source.Package(dir, &b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatal("the same files make different archives")
	}
	zr, err := gzip.NewReader(strings.NewReader(a.String()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tr := tar.NewReader(zr); ; {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
	if strings.Join(names, " ") != "a.yaml sub/ sub/b.yaml" {
		t.Fatalf("archive holds %q", names)
	}
	if err := os.Symlink("a.yaml", filepath.Join(dir, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := source.Package(dir, &b); err == nil || !strings.Contains(err.Error(), "link.yaml is not a regular file") {
		t.Fatalf("symlink: %v", err)
	}
}

var timeZero = time.Unix(1, 0)
