package bench

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/gitserver"
	"github.com/driftguard/driftguard/source"
	"github.com/driftguard/driftguard/test/bench/report"
	"github.com/driftguard/driftguard/test/sourceserver"
)

// noOpFetches is how many fetches of an unchanged source one iteration makes.
const noOpFetches = 50

// BenchmarkSourceNoOp measures the source phase of a no-op reconcile for
// each kind of source: a Fetch of an unchanged source, after a first one,
// against a real server on loopback. It reports the requests the server
// saw per fetch (from its request log) and the time per fetch. The rest of
// a no-op reconcile (the API side) is the same for every kind.
func BenchmarkSourceNoOp(b *testing.B) {
	ctx := context.Background()
	manifests := map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: bench\ndata:\n  value: one\n",
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bench\n",
	}
	bin := devenv.DefaultBinDir()
	kinds := []struct {
		name  string
		setup func(b *testing.B) (source.Request, *sourceserver.Front)
	}{
		{"git", func(b *testing.B) (source.Request, *sourceserver.Front) {
			srv, err := gitserver.Start(b.TempDir())
			if err != nil {
				b.Skipf("git server: %v", err)
			}
			b.Cleanup(func() { _ = srv.Close() })
			repo, err := srv.NewRepo("bench")
			if err != nil {
				b.Fatal(err)
			}
			for p, c := range manifests {
				if err := repo.WriteFile(p, c); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := repo.CommitAndPush("initial"); err != nil {
				b.Fatal(err)
			}
			front := startFront(b, srv.Handler())
			u := srv.URL("bench")
			return source.Request{URL: "http://" + front.Addr() + u[strings.LastIndex(u, "/"):], Ref: "main"}, front
		}},
		{"oci", func(b *testing.B) (source.Request, *sourceserver.Front) {
			reg, err := sourceserver.StartRegistry()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(reg.Close)
			if _, err := reg.PushFiles(ctx, "bench", "v1", manifests); err != nil {
				b.Fatal(err)
			}
			return source.Request{Kind: source.SourceOCI, URL: reg.URL("bench"), Ref: "v1", Artifact: &source.ArtifactSource{Insecure: true}}, reg.Front
		}},
		{"helm-http", func(b *testing.B) (source.Request, *sourceserver.Front) {
			repo := startChartRepo(b, bin)
			return source.Request{Kind: source.SourceHelmRepository, URL: repo.URL(), SemVer: "^1", Artifact: &source.ArtifactSource{Chart: "bench"}}, repo.Front
		}},
		{"helm-oci", func(b *testing.B) (source.Request, *sourceserver.Front) {
			repo := startChartRepo(b, bin)
			reg, err := sourceserver.StartRegistry()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(reg.Close)
			if _, err := repo.PushOCI(ctx, "bench", "1.0.0", reg.URL("charts")); err != nil {
				b.Fatal(err)
			}
			return source.Request{Kind: source.SourceHelmRepository, URL: reg.URL("charts"), SemVer: "1.0.0", Artifact: &source.ArtifactSource{Chart: "bench", Insecure: true}}, reg.Front
		}},
		{"bucket", func(b *testing.B) (source.Request, *sourceserver.Front) {
			if _, err := os.Stat(filepath.Join(bin, "minio")); err != nil {
				b.Skipf("minio missing in %s (run tools/build.sh): %v", bin, err)
			}
			m, err := sourceserver.StartMinIO(filepath.Join(bin, "minio"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(m.Close)
			if err := m.MakeBucket(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
			for p, c := range manifests {
				if err := m.Put(ctx, "bench", "apps/"+p, c); err != nil {
					b.Fatal(err)
				}
			}
			return source.Request{Kind: source.SourceBucket, URL: "http://" + m.Endpoint() + "/bench/apps", Artifact: &source.ArtifactSource{
				Endpoint: m.Endpoint(), Bucket: "bench", Prefix: "apps", Insecure: true,
				Credentials: &source.Credentials{AccessKey: m.AccessKey, SecretKey: m.SecretKey}}}, m.Front
		}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			req, front := k.setup(b)
			dir := b.TempDir()
			f := source.New(source.NewGitFetcher(filepath.Join(dir, "git"), logr.Discard()), filepath.Join(dir, "artifacts"), logr.Discard())
			_, first, err := f.Fetch(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			n := len(front.Requests())
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				for range noOpFetches {
					if _, snap, err := f.Fetch(ctx, req); err != nil || snap != first {
						b.Fatalf("no-op fetch: %v (same snapshot: %t)", err, snap == first)
					}
				}
			}
			took := time.Since(start)
			b.StopTimer()
			fetches := float64(b.N * noOpFetches)
			perFetch := float64(len(front.Requests())-n) / fetches
			b.ReportMetric(perFetch, "requests/fetch")
			b.ReportMetric(float64(took.Microseconds())/fetches, "us/fetch")
			note := "a fetch of an unchanged " + k.name + " source: metadata only, no download, no render"
			figure(b, withNote(report.NewFigure("source_noop_"+k.name+"_requests", perFetch, "requests/fetch", report.AtMost, 1), note))
			figure(b, withNote(report.NewFigure("source_noop_"+k.name+"_time", float64(took.Microseconds())/fetches/1000, "ms/fetch", report.AtMost, 50), note))
		})
	}
}

func startFront(b *testing.B, h http.Handler) *sourceserver.Front {
	b.Helper()
	front, err := sourceserver.NewFront(h)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(front.Close)
	return front
}

// startChartRepo serves a repository holding chart bench 1.0.0, made by helm.
func startChartRepo(b *testing.B, bin string) *sourceserver.ChartRepo {
	b.Helper()
	repo, err := sourceserver.StartChartRepo(filepath.Join(bin, "helm"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(repo.Close)
	err = repo.AddChart(context.Background(), "bench", "1.0.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  value: one\n",
	})
	if err != nil {
		b.Skipf("helm (run tools/build.sh): %v", err)
	}
	return repo
}
