package reconcile

import (
	"testing"

	"github.com/driftguard/driftguard/source"
)

func TestPinRevision(t *testing.T) {
	cases := []struct {
		kind        source.SourceKind
		rev         string
		ok          bool
		ref, semver string
	}{
		{source.SourceGit, "9f2c1e0aa0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5", true, "9f2c1e0aa0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5", ""},
		{source.SourceOCI, "v1.2@sha256:abcd", true, "sha256:abcd", ""},
		{source.SourceOCI, "latest", false, "", ""},
		{source.SourceHelmRepository, "web@1.2.3@sha256:abcd", true, "", "1.2.3"},
		{source.SourceBucket, "sha256:abcd", false, "", ""},
	}
	for _, c := range cases {
		got, ok := PinRevision(source.Request{Kind: c.kind, Ref: "main", SemVer: ">=1"}, c.rev)
		if ok != c.ok || (ok && (got.Ref != c.ref && c.kind != source.SourceHelmRepository || got.SemVer != c.semver)) {
			t.Errorf("PinRevision(%s, %q) = %+v, %v", c.kind, c.rev, got, ok)
		}
	}
}
