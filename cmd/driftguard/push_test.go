package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/sourceserver"
)

// TestPushArtifact: driftguard push artifact publishes a folder that a
// spec.oci source then applies, with the annotations asked for.
func TestPushArtifact(t *testing.T) {
	reg, err := sourceserver.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	reg.SetAuth("ci", "push-pass")
	dir := writeRepo(t, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: shop\n"})

	run := func(args ...string) (string, error) {
		cmd := newRootCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(context.Background())
		return out.String(), err
	}
	to := reg.URL("shop") + ":v1"
	if _, err := run("push", "artifact", dir, "--to", to, "--creds", "ci:push-pass"); err == nil || !strings.Contains(err.Error(), "pass --insecure") {
		t.Fatalf("plain HTTP without --insecure: %v", err)
	}
	if _, err := run("push", "artifact", dir, "--to", to, "--insecure", "--creds", "ci:wrong"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong credentials: %v", err)
	}
	out, err := run("push", "artifact", dir, "--to", to, "--insecure", "--creds", "ci:push-pass", "--source", "https://git.example/shop.git", "--revision", "main@sha1:abc")
	if err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "pushed "+to+"@sha256:") {
		t.Fatalf("output %q", out)
	}
	digest := strings.TrimSpace(out[strings.Index(out, "@")+1:])

	cache := t.TempDir()
	f := source.New(source.NewGitFetcher(filepath.Join(cache, "git"), logr.Discard()), cache, logr.Discard())
	rev, snap, err := f.Fetch(context.Background(), source.Request{Kind: source.SourceOCI, URL: reg.URL("shop"), Ref: "v1", Path: "apps",
		Artifact: &source.ArtifactSource{Insecure: true, Field: "spec.oci", Credentials: &source.Credentials{Username: "ci", Password: "push-pass"}}})
	if err != nil || rev != "v1@"+digest || len(snap.Objects) != 1 || snap.Objects[0].Source.Path != "apps/cm.yaml" {
		t.Fatalf("fetch the pushed artifact: %s %v", rev, err)
	}
	ref, err := name.ParseReference(strings.TrimPrefix(to, "oci://"), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, remote.WithAuth(&authn.Basic{Username: "ci", Password: "push-pass"}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != source.FluxConfigMediaType || len(m.Layers) != 1 || m.Layers[0].MediaType != source.FluxContentMediaType ||
		m.Annotations[source.AnnotationSource] != "https://git.example/shop.git" || m.Annotations[source.AnnotationRevision] != "main@sha1:abc" || m.Annotations[source.AnnotationCreated] == "" {
		t.Fatalf("manifest %+v", m)
	}
}
