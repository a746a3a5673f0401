package source_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/source"
)

// fetcherWithin is a Fetcher downloading within o.
func fetcherWithin(t *testing.T, o source.FetchOptions) *source.Fetcher {
	t.Helper()
	dir := t.TempDir()
	git := source.NewGitFetcher(filepath.Join(dir, "git"), logr.Discard())
	git.SetOptions(o)
	return source.New(git, filepath.Join(dir, "artifacts"), logr.Discard())
}

func noise(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// wantLimit checks that err is a render error (the revision is refused and
// remembered, the Guard fails alone) naming the flag.
func wantLimit(t *testing.T, rev string, snap *render.Snapshot, err error, flag string) {
	t.Helper()
	var re *render.RenderError
	var le *render.LimitError
	if rev == "" || snap != nil || !errors.As(err, &re) || !errors.As(err, &le) || le.Flag != flag || !strings.Contains(err.Error(), "(limit --"+flag+"=") {
		t.Fatalf("fetch = %q, %v; want a render error naming --%s", rev, err, flag)
	}
}

// TestArtifactLimits: an OCI artifact beyond the fetch options fails that
// revision naming the flag; within them it is fetched.
func TestArtifactLimits(t *testing.T) {
	ctx := context.Background()
	reg := startRegistry(t)
	if _, err := reg.PushFiles(ctx, "noisy", "v1", map[string]string{"cm.yaml": cm("cm", noise(t, 300<<10))}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.PushFiles(ctx, "zeros", "v1", map[string]string{"cm.yaml": cm("cm", strings.Repeat("0", 2<<20))}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.PushFiles(ctx, "many", "v1", map[string]string{"a.yaml": cm("a", "1"), "b.yaml": cm("b", "1"), "c.yaml": cm("c", "1")}); err != nil {
		t.Fatal(err)
	}
	d := source.DefaultFetchOptions()
	for _, tt := range []struct {
		name, repo string
		o          source.FetchOptions
		flag       string
	}{
		{"a layer beyond the fetch size", "noisy", source.FetchOptions{MaxFetchBytes: 128 << 10}, source.FlagSourceMaxFetchSize},
		{"a layer that unpacks beyond the unpacked size", "zeros", source.FetchOptions{MaxUnpackedBytes: 1 << 20}, source.FlagSourceMaxUnpacked},
		{"more files than allowed", "many", source.FetchOptions{MaxFiles: 2}, source.FlagSourceMaxFiles},
		{"within the defaults", "noisy", d, ""},
		{"zeros within the defaults", "zeros", d, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fetcherWithin(t, tt.o)
			rev, snap, err := f.Fetch(ctx, ociRequest(reg, tt.repo, "v1"))
			if tt.flag == "" {
				if err != nil || len(snap.Objects) != 1 {
					t.Fatalf("fetch = %s, %v", rev, err)
				}
				return
			}
			wantLimit(t, rev, snap, err, tt.flag)
			if !strings.Contains(err.Error(), reg.URL(tt.repo)) {
				t.Fatalf("error %v does not name the artifact", err)
			}
		})
	}
}

// TestBucketFetchLimit: the objects of a bucket prefix count against
// --source-max-fetch-size as they download, all together.
func TestBucketFetchLimit(t *testing.T) {
	ctx := context.Background()
	m := startMinIO(t)
	if err := m.MakeBucket(ctx, "manifests"); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"apps/a.yaml", "apps/b.yaml"} {
		if err := m.Put(ctx, "manifests", key, cm(filepath.Base(key), noise(t, 80<<10))); err != nil {
			t.Fatal(err)
		}
	}
	f := fetcherWithin(t, source.FetchOptions{MaxFetchBytes: 128 << 10})
	rev, snap, err := f.Fetch(ctx, bucketRequest(m, "apps"))
	wantLimit(t, rev, snap, err, source.FlagSourceMaxFetchSize)

	f = fetcherWithin(t, source.FetchOptions{MaxFetchBytes: 256 << 10})
	if _, snap, err := f.Fetch(ctx, bucketRequest(m, "apps")); err != nil || len(snap.Objects) != 2 {
		t.Fatalf("fetch within the limit: %v", err)
	}
}
