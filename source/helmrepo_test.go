package source_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/sourceserver"
)

// demoChart is a chart whose ConfigMap shows .Values.value.
func demoChart(value string) map[string]string {
	return map[string]string{
		"values.yaml":         "value: " + value + "\n",
		"values-prod.yaml":    "value: prod\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  value: {{ .Values.value | quote }}\n  release: {{ .Release.Name }}\n",
		"templates/NOTES.txt": "installed\n",
	}
}

func startChartRepo(t *testing.T) *sourceserver.ChartRepo {
	t.Helper()
	repo, err := sourceserver.StartChartRepo(filepath.Join(devenv.DefaultBinDir(), "helm"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(repo.Close)
	return repo
}

func helmRequest(url, version string) source.Request {
	req := source.Request{Kind: source.SourceHelmRepository, URL: url, SemVer: version,
		Artifact: &source.ArtifactSource{Chart: "demo", Insecure: true, Field: "spec.helmRepository"}}
	req.Render.Helm.ReleaseName = "web"
	req.Render.Helm.Namespace = "demo"
	return req
}

// archiveDigest is the digest helm repo index wrote for an archive.
func archiveDigest(t *testing.T, repo *sourceserver.ChartRepo, version string) string {
	t.Helper()
	data, err := os.ReadFile(repo.Archive("demo", version))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}

func TestHelmRepositoryFetchesOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	repo := startChartRepo(t)
	if err := repo.AddChart(ctx, "demo", "0.1.0", demoChart("one")); err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t)
	req := helmRequest(repo.URL(), "")
	rev, snap, err := f.Fetch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	r010 := "demo@0.1.0@" + archiveDigest(t, repo, "0.1.0")
	if rev != r010 || value(t, snap, "cm") != "one" || len(snap.Objects) != 1 {
		t.Fatalf("revision %s, %d objects", rev, len(snap.Objects))
	}
	o := snap.Objects[0]
	if o.Key.Namespace != "demo" || o.Source.Path != "demo/templates/cm.yaml" || o.Source.URL != repo.URL() || o.Source.Revision != rev {
		t.Fatalf("object %s from %+v", o.Key, o.Source)
	}

	// Unchanged: one GET of index.yaml, answered 304; no archive, no render.
	n := len(repo.Requests())
	if rev2, snap2, err := f.Fetch(ctx, req); err != nil || rev2 != rev || snap2 != snap {
		t.Fatalf("unchanged: %s %v (same snapshot: %t)", rev2, err, snap2 == snap)
	}
	if got := repo.Since(n); strings.Join(got, ",") != "GET /index.yaml" {
		t.Fatalf("requests of an unchanged fetch: %q", got)
	}

	// Values change: rendered again from the kept archive.
	n = len(repo.Requests())
	vals := req
	vals.Render.Helm.ValuesFiles = []string{"values-prod.yaml"}
	vals.Render.Helm.Values = json.RawMessage(`{"extra": true}`)
	if rev3, snap3, err := f.Fetch(ctx, vals); err != nil || rev3 != rev || value(t, snap3, "cm") != "prod" {
		t.Fatalf("values files: %s %v", rev3, err)
	}
	if got := repo.Since(n); strings.Join(got, ",") != "GET /index.yaml" {
		t.Fatalf("requests when only values changed: %q", got)
	}

	// A new version: the new archive.
	if err := repo.AddChart(ctx, "demo", "0.2.0", demoChart("two")); err != nil {
		t.Fatal(err)
	}
	rev, snap, err = f.Fetch(ctx, req)
	if err != nil || rev != "demo@0.2.0@"+archiveDigest(t, repo, "0.2.0") || value(t, snap, "cm") != "two" {
		t.Fatalf("new version: %s %v", rev, err)
	}

	// A range, and a revision fetched before.
	old := helmRequest(repo.URL(), "<0.2.0")
	if rev, _, err := f.Fetch(ctx, old); err != nil || rev != r010 {
		t.Fatalf("range <0.2.0: %s %v", rev, err)
	}
	pinned := req
	pinned.Ref = r010
	if rev, snap, err := f.Fetch(ctx, pinned); err != nil || rev != r010 || value(t, snap, "cm") != "one" {
		t.Fatalf("pinned: %s %v", rev, err)
	}
}

func TestHelmRepositoryBadInput(t *testing.T) {
	ctx := context.Background()
	repo := startChartRepo(t)
	if err := repo.AddChart(ctx, "demo", "0.1.0", demoChart("one")); err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t)

	// An archive broken at the source, whose digest index.yaml matches.
	if err := repo.AddChart(ctx, "demo", "0.2.0", demoChart("two")); err != nil {
		t.Fatal(err)
	}
	junk := []byte("not a chart archive\n")
	if err := os.WriteFile(repo.Archive("demo", "0.2.0"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	setIndexDigest(t, repo, "0.2.0", fmt.Sprintf("%x", sha256.Sum256(junk)))
	rev, _, err := f.Fetch(ctx, helmRequest(repo.URL(), ""))
	var re *render.RenderError
	if !errors.As(err, &re) || !strings.HasPrefix(rev, "demo@0.2.0@") || re.Path != repo.URL()+"/demo-0.2.0.tgz" || !strings.Contains(err.Error(), "not a gzip archive") {
		t.Fatalf("broken archive: %s %v", rev, err)
	}

	// An archive that is not what index.yaml says: a fetch error naming it.
	if err := repo.AddChart(ctx, "demo", "0.3.0", demoChart("three")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(repo.Archive("demo", "0.3.0"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.Fetch(ctx, helmRequest(repo.URL(), ""))
	var fe *source.FetchError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "/demo-0.3.0.tgz: the archive has digest sha256:") {
		t.Fatalf("digest mismatch: %v", err)
	}

	tests := []struct {
		name    string
		req     func(source.Request) source.Request
		auth    bool
		wantErr string
	}{
		{"chart not in the index", func(r source.Request) source.Request { r.Artifact.Chart = "nope"; return r }, false, "chart nope is not in " + repo.URL() + "/index.yaml (it has demo)"},
		{"no version in range", func(r source.Request) source.Request { r.SemVer = ">=5"; return r }, false, `no version of chart demo matches semver range ">=5"`},
		{"bad range", func(r source.Request) source.Request { r.SemVer = "not a range"; return r }, false, `semver range "not a range"`},
		{"no credentials", func(r source.Request) source.Request { return r }, true, "401 Unauthorized; the chart repository needs credentials: name a Secret in spec.helmRepository.secretRef"},
		{"wrong credentials", func(r source.Request) source.Request {
			r.Artifact.Credentials = &source.Credentials{Username: "u", Password: "bad", Secret: "Secret infra/charts (spec.helmRepository.secretRef)"}
			return r
		}, true, "401 Unauthorized; check the credentials in Secret infra/charts (spec.helmRepository.secretRef)"},
		{"credentials over plain HTTP without insecure", func(r source.Request) source.Request {
			r.Artifact.Insecure = false
			r.Artifact.Credentials = &source.Credentials{Username: "u", Password: "good", Secret: "Secret infra/charts (spec.helmRepository.secretRef)"}
			return r
		}, true, "Secret infra/charts (spec.helmRepository.secretRef): the username and password (basic auth) would go in clear text to http://" + repo.Addr() +
			": use an https:// URL, or set spec.helmRepository.insecure to true to send them anyway: credentials are never sent over plain http://"},
		{"user information over plain HTTP without insecure", func(r source.Request) source.Request {
			r.Artifact.Insecure = false
			r.URL = "http://u:good@" + repo.Addr()
			return r
		}, true, "the URL's user information would go in clear text to http://" + repo.Addr()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.auth {
				repo.SetAuth("u", "good")
				defer repo.SetAuth("", "")
			}
			before := len(repo.Requests())
			_, _, err := newFetcher(t).Fetch(ctx, tt.req(helmRequest(repo.URL(), "<0.2.0")))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "good") {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, source.ErrPlainHTTPCredentials) && len(repo.Requests()) != before {
				t.Fatalf("refused credentials, yet the repository got %v", repo.Requests()[before:])
			}
		})
	}
}

// setIndexDigest rewrites the digest of a version in index.yaml, as a
// repository whose tool indexed a broken archive would hold it.
func setIndexDigest(t *testing.T, repo *sourceserver.ChartRepo, version, digest string) {
	t.Helper()
	p := filepath.Join(repo.Dir, "index.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]any
	if err := yaml.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	for _, e := range index["entries"].(map[string]any)["demo"].([]any) {
		if m := e.(map[string]any); m["version"] == version {
			m["digest"] = digest
		}
	}
	if data, err = yaml.Marshal(index); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHelmChartFromOCI(t *testing.T) {
	ctx := context.Background()
	repo := startChartRepo(t)
	reg := startRegistry(t)
	for _, v := range []string{"0.1.0", "0.2.0"} {
		if err := repo.AddChart(ctx, "demo", v, demoChart(v)); err != nil {
			t.Fatal(err)
		}
		if _, err := repo.PushOCI(ctx, "demo", v, reg.URL("charts")); err != nil {
			t.Fatal(err)
		}
	}
	f := newFetcher(t)
	req := helmRequest(reg.URL("charts"), "0.1.0")
	apis := []string{"v1"} // the cluster's, as discovery tells them
	req.Render.Helm.CapabilitiesFrom = func() (*render.Capabilities, error) {
		return &render.Capabilities{KubeVersion: "v1.37.2", APIVersions: apis}, nil
	}
	rev, snap, err := f.Fetch(ctx, req)
	if err != nil || !strings.HasPrefix(rev, "demo@0.1.0@sha256:") || value(t, snap, "cm") != "0.1.0" {
		t.Fatalf("exact version: %s %v", rev, err)
	}
	n := len(reg.Requests())
	if _, snap2, err := f.Fetch(ctx, req); err != nil || snap2 != snap {
		t.Fatalf("unchanged: %v", err)
	}
	if got := reg.Since(n); strings.Join(got, ",") != "HEAD /v2/charts/demo/manifests/0.1.0" {
		t.Fatalf("requests of an unchanged fetch: %q", got)
	}
	// The cluster's capabilities changed (a CRD installed anywhere): the
	// same revision is rendered again from the files kept, downloading
	// nothing but the HEAD that tells the revision.
	n = len(reg.Requests())
	for _, crd := range []string{"example.com/v1", "example.com/v2"} {
		apis = []string{"v1", crd}
		_, again, err := f.Fetch(ctx, req)
		if err != nil || again == snap || value(t, again, "cm") != "0.1.0" {
			t.Fatalf("capabilities with %s: rendered again %v, %v", crd, again != snap, err)
		}
		snap = again
	}
	if got := reg.Since(n); strings.Join(got, ",") != "HEAD /v2/charts/demo/manifests/0.1.0,HEAD /v2/charts/demo/manifests/0.1.0" {
		t.Fatalf("requests of a render with new capabilities: %q", got)
	}
	if rev, snap, err := f.Fetch(ctx, helmRequest(reg.URL("charts"), ">=0.1.0")); err != nil || !strings.HasPrefix(rev, "demo@0.2.0@sha256:") || value(t, snap, "cm") != "0.2.0" {
		t.Fatalf("range: %s %v", rev, err)
	}
}
