package source

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/gitserver"
)

// annotatedTag creates the annotated tag name on HEAD of r and pushes it;
// gitserver's Tag makes lightweight tags only.
func annotatedTag(t *testing.T, r *gitserver.Repo, name string) {
	t.Helper()
	for _, args := range [][]string{
		{"tag", "-a", "-m", "release " + name, name},
		{"push", "--quiet", "origin", "refs/tags/" + name},
	} {
		cmd := exec.CommandContext(t.Context(), "git", args...)
		cmd.Dir = r.Dir
		cmd.Env = []string{"HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
}

func TestFetchSemVer(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("releases")
	if err != nil {
		t.Fatal(err)
	}
	url := gs.url("releases")
	shas := map[string]string{}
	for _, tag := range []string{"v1.0.0", "v1.2.0", "v1.3.1", "v2.0.0", "v2.1.0-rc.1"} {
		shas[tag] = mustPush(t, repo, map[string]string{"cm.yaml": configMap(strings.ReplaceAll(tag, ".", "-"))}, tag)
		if tag == "v1.2.0" {
			annotatedTag(t, repo, tag)
			continue
		}
		if err := repo.Tag(tag); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range []string{"latest", "v3", "v4.0"} { // not versions
		if err := repo.Tag(other); err != nil {
			t.Fatal(err)
		}
	}

	f := NewGitFetcher(t.TempDir(), logr.Discard())
	tests := []struct {
		rng, want string
	}{
		{">=1.2.0 <2", "v1.3.1"},
		{"^1", "v1.3.1"},
		{"~1.2", "v1.2.0"}, // annotated: the commit, not the tag object
		{"1.2.0", "v1.2.0"},
		{">=1.0.0 <1.2.0", "v1.0.0"},
		{"*", "v2.0.0"},              // no pre-release unless asked
		{">=2.1.0-0", "v2.1.0-rc.1"}, // asked
		{"<1.1 || >=2 <2.1", "v2.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.rng, func(t *testing.T) {
			rev, snap, err := f.Fetch(t.Context(), Request{URL: url, SemVer: tt.rng})
			if err != nil {
				t.Fatalf("fetch: %v", err)
			}
			if rev != shas[tt.want] {
				t.Fatalf("revision %s, want %s of %s", rev, shas[tt.want], tt.want)
			}
			if got := strings.Join(names(snap), ","); got != strings.ReplaceAll(tt.want, ".", "-") {
				t.Fatalf("objects = %s", got)
			}
		})
	}

	bare, err := gs.NewRepo("untagged")
	if err != nil {
		t.Fatal(err)
	}
	mustPush(t, bare, map[string]string{"cm.yaml": configMap("a")}, "first")
	if err := bare.Tag("stable"); err != nil {
		t.Fatal(err)
	}

	errorCases := []struct {
		name string
		req  Request
		want string
	}{
		{"bad range", Request{URL: url, SemVer: ">=1.2.0 <<2"}, `semver range ">=1.2.0 <<2": `},
		{"nothing in range", Request{URL: url, SemVer: ">=3"}, `no tag matches semver range ">=3"; newest tags: v2.1.0-rc.1, v2.0.0, v1.3.1, v1.2.0, v1.0.0`},
		{"no version tags", Request{URL: gs.url("untagged"), SemVer: "*"}, `no tag matches semver range "*": the remote has no version tags`},
		{"ref and semver", Request{URL: url, Ref: "main", SemVer: "^1"}, `ref "main" and semver range "^1" exclude each other`},
	}
	for _, tt := range errorCases {
		t.Run(tt.name, func(t *testing.T) {
			before := gs.packs.Load()
			_, snap, err := f.Fetch(t.Context(), tt.req)
			var fe *FetchError
			if !errors.As(err, &fe) || snap != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a FetchError containing %q", err, tt.want)
			}
			if n := gs.packs.Load() - before; n != 0 {
				t.Fatalf("%d pack requests for a failed resolve", n)
			}
		})
	}
}

func TestSemverTags(t *testing.T) {
	h := plumbing.NewHash("0123456789012345678901234567890123456789")
	var refs []*plumbing.Reference
	for _, name := range []string{
		"refs/heads/v9.9.9", "refs/tags/v1.2.0", "refs/tags/v1.2.0^{}", "refs/tags/1.10.0",
		"refs/tags/v1.2", "refs/tags/release-2.0.0", "refs/tags/v1.10.0", "refs/tags/v2.0.0-beta.1+build.5", "HEAD",
	} {
		refs = append(refs, plumbing.NewHashReference(plumbing.ReferenceName(name), h))
	}
	var got []string
	for _, tag := range semverTags(refs) {
		got = append(got, tag.name.Short())
	}
	if want := "v2.0.0-beta.1+build.5,1.10.0,v1.10.0,v1.2.0"; strings.Join(got, ",") != want {
		t.Fatalf("semverTags = %v, want %s", got, want)
	}
}
