package reconcile

import (
	"errors"
	"strings"
	"testing"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/source"
)

func TestSourceRequest(t *testing.T) {
	tests := []struct {
		name    string
		spec    v1alpha1.GuardSpec
		want    source.Request
		invalid string
	}{
		{"git", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "https://git.example/infra.git", SemVer: "^1"}},
			source.Request{Kind: source.SourceGit, URL: "https://git.example/infra.git", SemVer: "^1", Field: "spec.git.url"}, ""},
		{"helm repository", v1alpha1.GuardSpec{HelmRepository: &v1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", Version: "^2"}},
			source.Request{Kind: source.SourceHelmRepository, URL: "https://charts.example", SemVer: "^2", Artifact: &source.ArtifactSource{Chart: "web", Field: "spec.helmRepository"}}, ""},
		{"oci digest", v1alpha1.GuardSpec{OCI: &v1alpha1.OCISource{URL: "oci://ghcr.io/acme/deploy", Digest: "sha256:abc", Path: "prod", Insecure: true}},
			source.Request{Kind: source.SourceOCI, URL: "oci://ghcr.io/acme/deploy", Ref: "sha256:abc", Path: "prod", Artifact: &source.ArtifactSource{Insecure: true, Field: "spec.oci"}}, ""},
		{"bucket", v1alpha1.GuardSpec{Bucket: &v1alpha1.BucketSource{Endpoint: "minio:9000", Bucket: "infra", Prefix: "/apps/", Region: "eu-1"}},
			source.Request{Kind: source.SourceBucket, URL: "https://minio:9000/infra/apps", Artifact: &source.ArtifactSource{Endpoint: "minio:9000", Bucket: "infra", Prefix: "/apps/", Region: "eu-1", Field: "spec.bucket"}}, ""},
		{"none", v1alpha1.GuardSpec{}, source.Request{}, "the Guard names no source"},
		{"two", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "https://git.example/infra.git"}, OCI: &v1alpha1.OCISource{URL: "oci://r/a"}}, source.Request{}, "the Guard names 2 sources (spec.git, spec.oci): keep exactly one"},
		{"tag and digest", v1alpha1.GuardSpec{OCI: &v1alpha1.OCISource{URL: "oci://r/a", Tag: "v1", Digest: "sha256:abc"}}, source.Request{}, "exclude each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := sourceRequest(&tt.spec)
			if tt.invalid != "" {
				var ie *InvalidSourceError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.invalid) {
					t.Fatalf("err = %v, want InvalidSource %q", err, tt.invalid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.want.Kind || got.URL != tt.want.URL || got.Ref != tt.want.Ref || got.SemVer != tt.want.SemVer || got.Path != tt.want.Path || got.Field != tt.want.Field {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if u := SourceURL(&v1alpha1.Guard{Spec: tt.spec}); u != tt.want.URL {
				t.Fatalf("SourceURL = %q, want %q", u, tt.want.URL)
			}
			if (got.Artifact == nil) != (tt.want.Artifact == nil) || (got.Artifact != nil && *got.Artifact != *tt.want.Artifact) {
				t.Fatalf("artifact %+v, want %+v", got.Artifact, tt.want.Artifact)
			}
		})
	}
}

func TestCredentials(t *testing.T) {
	tests := []struct {
		name    string
		kind    source.SourceKind
		data    map[string]string
		want    source.Credentials
		wantErr string
	}{
		{"basic", source.SourceOCI, map[string]string{"username": "u", "password": "p"}, source.Credentials{Username: "u", Password: "p"}, ""},
		{"token", source.SourceHelmRepository, map[string]string{"bearerToken": "t"}, source.Credentials{BearerToken: "t"}, ""},
		{"username alone", source.SourceOCI, map[string]string{"username": "u"}, source.Credentials{}, `secret keys "username" and "password" go together`},
		{"nothing usable", source.SourceOCI, map[string]string{"accessKey": "a"}, source.Credentials{}, `secret has none of the keys "username", "password", "bearerToken" or ".dockerconfigjson"`},
		{"bucket keys", source.SourceBucket, map[string]string{"accessKey": "a", "secretKey": "s"}, source.Credentials{AccessKey: "a", SecretKey: "s"}, ""},
		{"bucket without secret key", source.SourceBucket, map[string]string{"accessKey": "a"}, source.Credentials{}, `secret needs the keys "accessKey" and "secretKey"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tt.data {
				data[k] = []byte(v)
			}
			got, err := Credentials(tt.kind, data, "Secret x/y (f)")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			tt.want.Secret = "Secret x/y (f)"
			if err != nil || got.Username != tt.want.Username || got.Password != tt.want.Password || got.BearerToken != tt.want.BearerToken ||
				got.AccessKey != tt.want.AccessKey || got.SecretKey != tt.want.SecretKey || got.Secret != tt.want.Secret {
				t.Fatalf("got %+v %v, want %+v", got, err, tt.want)
			}
		})
	}
}
