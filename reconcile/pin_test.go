package reconcile

import (
	"testing"

	"github.com/driftguard/driftguard/gitstore"
)

func TestPinRevision(t *testing.T) {
	cases := []struct {
		kind        gitstore.SourceKind
		rev         string
		ok          bool
		ref, semver string
	}{
		{gitstore.SourceGit, "9f2c1e0aa0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5", true, "9f2c1e0aa0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5", ""},
		{gitstore.SourceOCI, "v1.2@sha256:abcd", true, "sha256:abcd", ""},
		{gitstore.SourceOCI, "latest", false, "", ""},
		{gitstore.SourceHelmRepository, "web@1.2.3@sha256:abcd", true, "", "1.2.3"},
		{gitstore.SourceBucket, "sha256:abcd", false, "", ""},
	}
	for _, c := range cases {
		got, ok := PinRevision(gitstore.Request{Kind: c.kind, Ref: "main", SemVer: ">=1"}, c.rev)
		if ok != c.ok || (ok && (got.Ref != c.ref && c.kind != gitstore.SourceHelmRepository || got.SemVer != c.semver)) {
			t.Errorf("PinRevision(%s, %q) = %+v, %v", c.kind, c.rev, got, ok)
		}
	}
}
