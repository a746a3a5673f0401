package source

import (
	"context"
	"strings"
	"testing"
)

// TestHelmIndexDigest: the digest index.yaml names for a chart archive
// becomes part of the revision; one that is not a sha256 digest is an
// error naming it, not a revision "demo@1.0.0@sha256:0000" that no archive
// can match (FuzzHelmIndex found it).
func TestHelmIndexDigest(t *testing.T) {
	h := newHostile(t)
	archive := gz(tarSeeds()[1])
	hexDigest := strings.TrimPrefix(digestOf(archive), "sha256:")
	tests := []struct {
		name, digest string
		wantErr      string
	}{
		{"hex", hexDigest, ""},
		{"sha256: and hex", "sha256:" + hexDigest, ""},
		{"upper case hex", strings.ToUpper(hexDigest), ""},
		{"none: the archive's own", "", ""},
		{"short", "0000", `digest "0000" is not a sha256 digest`},
		{"not hex", strings.Repeat("z", 64), "is not a sha256 digest"},
		{"another algorithm", "sha512:" + hexDigest, "is not a sha256 digest"},
		{"with an @", hexDigest[:60] + "@abc", "is not a sha256 digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := "apiVersion: v1\nentries:\n  demo:\n  - name: demo\n    version: 1.0.0\n    digest: \"" + tt.digest + "\"\n    urls: [demo-1.0.0.tgz]\n"
			h.cur.Store(&served{index: index, blob: archive})
			req := Request{Kind: SourceHelmRepository, URL: h.srv.URL,
				Artifact: &ArtifactSource{Chart: "demo", Insecure: true, Field: "spec.helmRepository"}}
			tg, err := h.f.resolveHelm(context.Background(), &state{}, req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("revision %q, err %v; want an error %q", tg.rev, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "demo@1.0.0@sha256:" + hexDigest; tg.rev != want {
				t.Fatalf("revision %s, want %s", tg.rev, want)
			}
			if _, _, err := tg.load(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
