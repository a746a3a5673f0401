package source

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
)

// TestLocalSourcesRefused: a Guard's URL cannot name the guard's own disk
// (its caches hold other Guards' private repositories) unless the guard
// runs with --allow-local-sources.
func TestLocalSourcesRefused(t *testing.T) {
	_, repo, url := privateRepo(t)
	mustPush(t, repo, map[string]string{"apps/cm.yaml": configMap("secret")}, "first")
	cacheDir := t.TempDir()
	f := NewGitFetcher(cacheDir, logr.Discard())
	owner := Request{URL: url, Path: "apps", Auth: &Auth{Username: "deploy", Password: "s3cret"}}
	if _, _, err := f.Fetch(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	// The other Guard's repository, as the cache holds it.
	cached := filepath.Join(cacheDir, owner.CacheKey()[:32]+".git")
	if _, err := os.Stat(cached); err != nil {
		t.Fatalf("the cache is not where the test looks: %v", err)
	}

	for _, tt := range []struct {
		name, url, field string
	}{
		{"file URL of the cache", "file://" + cached, "spec.url"},
		{"path of the cache", cached, "spec.git.url"},
		{"relative path", "../" + filepath.Base(cacheDir) + "/x.git", "spec.url"},
		{"file URL with a host", "file://localhost" + cached, "spec.url"},
		{"no field known", "file://" + cached, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rev, snap, err := f.Fetch(t.Context(), Request{URL: tt.url, Ref: "HEAD", Path: "apps", Field: tt.field})
			if err == nil || snap != nil {
				t.Fatalf("fetch = %s, %v; want it refused", rev, err)
			}
			field := tt.field
			if field == "" {
				field = "the source URL"
			}
			var fe *FetchError
			if !errors.Is(err, ErrLocalSource) || !errors.As(err, &fe) || !strings.Contains(err.Error(), field+" ") || !strings.Contains(err.Error(), "--allow-local-sources") {
				t.Fatalf("error %v does not name the field %s and --allow-local-sources", err, field)
			}
		})
	}

	t.Run("with --allow-local-sources", func(t *testing.T) {
		local := NewGitFetcher(t.TempDir(), logr.Discard())
		local.SetOptions(FetchOptions{AllowLocal: true})
		_, snap, err := local.Fetch(t.Context(), Request{URL: "file://" + cached, Ref: "main", Path: "apps"})
		if err != nil || len(snap.Objects) != 1 {
			t.Fatalf("fetch of a local repository with AllowLocal: %v", err)
		}
	})
}

// TestFetchSizeLimit: a pack larger than --source-max-fetch-size fails that
// revision as it arrives, names the limit, leaves nothing in the cache and
// is not fetched again; a revision within the limit is fetched.
func TestFetchSizeLimit(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("big")
	if err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 600<<10) // random: Git cannot compress it (below git push's 1 MiB post buffer)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	small := mustPush(t, repo, map[string]string{"apps/cm.yaml": configMap("web")}, "small")
	url := gs.url("big")

	cacheDir := t.TempDir()
	f := NewGitFetcher(cacheDir, logr.Discard())
	f.SetOptions(FetchOptions{MaxFetchBytes: 256 << 10})
	if rev, _, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps"}); err != nil || rev != small {
		t.Fatalf("fetch of the small revision: %s, %v", rev, err)
	}
	big := mustPush(t, repo, map[string]string{"blob.txt": base64.StdEncoding.EncodeToString(noise)}, "big")
	for i := range 2 {
		packs := gs.packs.Load()
		rev, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps"})
		var re *render.RenderError
		var le *render.LimitError
		if rev != big || snap != nil || !errors.As(err, &re) || !errors.As(err, &le) || le.Flag != FlagSourceMaxFetchSize ||
			!strings.Contains(err.Error(), "is larger than 256Ki (limit --source-max-fetch-size=256Ki)") {
			t.Fatalf("fetch %d of the large revision = %s, %v; want a render error naming --source-max-fetch-size", i, rev, err)
		}
		if i == 1 && gs.packs.Load() != packs {
			t.Fatal("the revision that went beyond the limit was fetched again")
		}
	}
	var left []string
	_ = filepath.Walk(cacheDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(info.Name(), "tmp_") {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("the refused pack is left in the cache: %v", left)
	}

	roomy := NewGitFetcher(t.TempDir(), logr.Discard())
	roomy.SetOptions(FetchOptions{MaxFetchBytes: 16 << 20})
	if rev, _, err := roomy.Fetch(t.Context(), Request{URL: url, Ref: "main", Path: "apps"}); err != nil || rev != big {
		t.Fatalf("fetch within a larger limit: %s, %v", rev, err)
	}
}

func TestFetchOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    FetchOptions
		want string
	}{
		{"defaults", DefaultFetchOptions(), ""},
		{"no fetch size", FetchOptions{MaxUnpackedBytes: 1, MaxFiles: 1}, "--source-max-fetch-size: must be above 0"},
		{"no unpacked size", FetchOptions{MaxFetchBytes: 1, MaxFiles: 1}, "--source-max-unpacked-size: must be above 0"},
		{"no files", FetchOptions{MaxFetchBytes: 1, MaxUnpackedBytes: 1}, "--source-max-files: must be above 0"},
		{"no object size", FetchOptions{MaxFetchBytes: 1, MaxUnpackedBytes: 1, MaxFiles: 1}, "--git-max-object-size: must be above 0"},
		{"no cache packs", FetchOptions{MaxFetchBytes: 1, MaxUnpackedBytes: 1, MaxFiles: 1, MaxObjectBytes: 1}, "--git-cache-max-packs: must be above 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && err.Error() != tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}
