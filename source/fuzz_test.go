package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
)

// Fuzz targets of what a registry, a chart repository or a bucket serves:
// the guard unpacks archives and parses manifests and indexes it did not
// write. Run one with
//
//	go test -run='^$' -fuzz='^FuzzUntar$' -fuzztime=20s ./source/

// fuzzTar writes a tar of the entries (name, then content; a name ending
// in "/" is a folder), for seeds.
func fuzzTar(entries ...string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+1 < len(entries); i += 2 {
		hdr := &tar.Header{Name: entries[i], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(entries[i+1]))}
		if strings.HasSuffix(entries[i], "/") {
			hdr.Typeflag, hdr.Mode, hdr.Size = tar.TypeDir, 0o755, 0
		}
		_ = tw.WriteHeader(hdr)
		_, _ = tw.Write([]byte(entries[i+1]))
	}
	_ = tw.Close()
	return buf.Bytes()
}

// fuzzTarOf writes a tar of one special entry (a link, a device, a
// PAX header) between two files.
func fuzzTarOf(hdr *tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "a.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2})
	_, _ = tw.Write([]byte("a\n"))
	_ = tw.WriteHeader(hdr)
	_ = tw.WriteHeader(&tar.Header{Name: "b.yaml", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2})
	_, _ = tw.Write([]byte("b\n"))
	_ = tw.Close()
	return buf.Bytes()
}

func gz(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}

// tarSeeds are tar streams like those artifacts, charts and hostile
// archives hold.
func tarSeeds() [][]byte {
	chart := "apiVersion: v2\nname: demo\nversion: 0.1.0\n"
	return [][]byte{
		fuzzTar("./", "", "./deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n", "sub/", "", "sub/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"),
		fuzzTar("demo/Chart.yaml", chart, "demo/values.yaml", "replicas: 1\n", "demo/templates/cm.yaml", "kind: ConfigMap\n", "demo/charts/sub/Chart.yaml", chart),
		fuzzTar("../evil.yaml", "x"),
		fuzzTar("/etc/passwd", "root:x:0:0\n"),
		fuzzTar("a\\..\\..\\b", "x", "./././c", "y"),
		fuzzTar("a", "file", "a/b", "below a file"),
		fuzzTar("a/b", "below a file", "a", "file"),
		fuzzTar("x.yaml", "one", "x.yaml", "two"),
		fuzzTar("dir/", "", "dir", "a file where the folder is"),
		fuzzTarOf(&tar.Header{Name: "link.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
		fuzzTarOf(&tar.Header{Name: "hard.yaml", Typeflag: tar.TypeLink, Linkname: "a.yaml"}),
		fuzzTarOf(&tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}),
		fuzzTarOf(&tar.Header{Name: "long/" + strings.Repeat("n", 200) + ".yaml", Typeflag: tar.TypeReg, Format: tar.FormatPAX, PAXRecords: map[string]string{"path": "../pax.yaml"}}),
		fuzzTarOf(&tar.Header{Name: "sparse", Typeflag: tar.TypeGNUSparse, Size: 1 << 40}),
		fuzzTarOf(&tar.Header{Name: "big.yaml", Typeflag: tar.TypeReg, Size: maxUnpackedSize + 1}),
		fuzzTar("1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f", "7", "g", "8", "h", "9", "i"),
		fuzzTar("big.yaml", strings.Repeat("x", 5000)),
		fuzzTar("d.yaml", strings.Repeat("x", 3000), "d.yaml", strings.Repeat("y", 3000)),
		nil,
	}
}

// FuzzUntar unpacks an archive as an OCI artifact, a chart archive of a
// chart repository or a chart pulled from a registry is unpacked. raw
// false gzips the fuzzer's bytes first (so it works on the tar), raw true
// hands them over as they are (so it works on the gzip stream). An
// archive that unpacks must have no path that leaves it, stay within the
// bounds, be a tree (no path both a file and a folder), make a
// consistent fs.FS, and pack into a tar that unpacks to the same files.
func FuzzUntar(f *testing.F) {
	for _, s := range tarSeeds() {
		f.Add(s, false)
	}
	f.Add(gz(fuzzTar("a.yaml", "x")), true)
	f.Add(append(gz(fuzzTar("a.yaml", "x")), gz(fuzzTar("b.yaml", "y"))...), true) // two gzip members
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"), true)
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		in := data
		if !raw {
			in = gz(data)
		}
		files, err := untar(bytes.NewReader(in))
		// Within small bounds, which the fuzzer reaches: the same files,
		// or a limit error when the archive is beyond them.
		small, errSmall := untarWithin(bytes.NewReader(in), fuzzMaxBytes, fuzzMaxFiles)
		var le *render.LimitError
		switch {
		case errSmall == nil && (err != nil || len(small) != len(files)):
			t.Fatalf("%d files within the small bounds, %d (%v) within the defaults", len(small), len(files), err)
		case errSmall != nil && err == nil && !errors.As(errSmall, &le):
			t.Fatalf("within the defaults it unpacks, within the small bounds: %v", errSmall)
		}
		if errSmall == nil {
			checkUnpacked(t, small, fuzzMaxBytes, fuzzMaxFiles)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		checkUnpacked(t, files, maxUnpackedSize, maxFiles)

		// Packed again, the files unpack to the same files.
		var names []string
		for name := range files {
			names = append(names, name)
		}
		slices.Sort(names)
		var entries []string
		for _, name := range names {
			entries = append(entries, name, string(files[name]))
		}
		again, err := untar(bytes.NewReader(gz(fuzzTar(entries...))))
		if err != nil {
			t.Fatalf("the unpacked files do not unpack again: %v", err)
		}
		if len(again) != len(files) {
			t.Fatalf("unpacked again: %d files, first %d", len(again), len(files))
		}
		for name, data := range files {
			if !bytes.Equal(again[name], data) {
				t.Fatalf("unpacked again: %s differs", name)
			}
		}

		// A chart archive: the chart folder is one that holds Chart.yaml.
		if fsys, dir, err := chartFS(in, "fuzz", time.Time{}); err == nil {
			if _, ok := files[path.Join(dir, "Chart.yaml")]; !ok || strings.Count(dir, "/") > 0 {
				t.Fatalf("chart folder %q of %q", dir, names)
			}
			if _, err := fs.Stat(fsys, path.Join(dir, "Chart.yaml")); err != nil {
				t.Fatalf("chart folder %q: %v", dir, err)
			}
		}
	})
}

// Small bounds of the unpacked files, which the fuzzer reaches.
const (
	fuzzMaxBytes = 4 << 10
	fuzzMaxFiles = 8
)

// checkUnpacked checks files unpacked from an archive within bounds.
func checkUnpacked(t *testing.T, files map[string][]byte, maxBytes int64, maxEntries int) {
	t.Helper()
	if len(files) > maxEntries {
		t.Fatalf("%d files unpacked, limit %d", len(files), maxEntries)
	}
	var total int64
	for name, data := range files {
		total += int64(len(data))
		if !fs.ValidPath(name) || name == "." || strings.Contains(name, "\\") {
			t.Fatalf("unpacked path %q is not a clean relative path", name)
		}
		if p, err := entryPath(name); err != nil || p != name {
			t.Fatalf("unpacked path %q cleans to %q (%v)", name, p, err)
		}
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, ok := files[dir]; ok {
				t.Fatalf("%s is a file and the folder of %s", dir, name)
			}
		}
	}
	if total > maxBytes {
		t.Fatalf("%d bytes unpacked, limit %d", total, maxBytes)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	if err := fstest.TestFS(newMemFS(files, time.Time{}), names...); err != nil {
		t.Fatalf("the unpacked files are not a consistent file system: %v", err)
	}
}

// hostile is a server on loopback that serves what the fuzzer wrote, as
// a registry or a chart repository does; a Fetcher whose transport dials
// nothing else talks to it.
type hostile struct {
	srv *httptest.Server
	cur atomic.Pointer[served]
	f   *Fetcher
}

// served is what the hostile server answers with.
type served struct {
	manifest, manifestType string // a registry's manifest
	index                  string // a chart repository's index.yaml
	blob                   []byte // the layer or chart archive
}

func newHostile(tb testing.TB) *hostile {
	h := &hostile{}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	tb.Cleanup(h.srv.Close)
	h.f = New(nil, "", logr.Discard())
	addr := h.srv.Listener.Addr().String()
	var d net.Dialer
	h.f.http.Proxy = nil
	h.f.http.DialContext = func(ctx context.Context, network, a string) (net.Conn, error) {
		if a != addr {
			return nil, fmt.Errorf("fuzz: dial %s refused: only the loopback server %s is reached", a, addr)
		}
		return d.DialContext(ctx, network, a)
	}
	tb.Cleanup(h.f.http.CloseIdleConnections)
	return h
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (h *hostile) serve(w http.ResponseWriter, r *http.Request) {
	s := h.cur.Load()
	p := r.URL.Path
	switch {
	case p == "/v2/" || p == "/v2":
		w.WriteHeader(http.StatusOK)
	case strings.Contains(p, "/manifests/"):
		w.Header().Set("Content-Type", s.manifestType)
		w.Header().Set("Docker-Content-Digest", digestOf([]byte(s.manifest)))
		w.Header().Set("Content-Length", strconv.Itoa(len(s.manifest)))
		if r.Method != http.MethodHead {
			_, _ = w.Write([]byte(s.manifest))
		}
	case strings.Contains(p, "/blobs/"):
		if path.Base(p) != digestOf(s.blob) {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}`, http.StatusNotFound)
			return
		}
		_, _ = w.Write(s.blob)
	case p == "/index.yaml":
		_, _ = w.Write([]byte(s.index))
	default:
		_, _ = w.Write(s.blob) // a chart archive at whatever URL the index names
	}
}

// fill replaces the placeholders of a manifest or index by what the
// fuzzer cannot compute: the digest and size of the blob and the
// server's address.
func (h *hostile) fill(text string, blob []byte) string {
	return strings.NewReplacer(
		"@DIGEST@", digestOf(blob),
		"@HEX@", strings.TrimPrefix(digestOf(blob), "sha256:"),
		"@SIZE@", strconv.Itoa(len(blob)),
		"@SERVER@", h.srv.URL,
	).Replace(text)
}

const fuzzManifest = `{
  "schemaVersion": 2,
  "mediaType": "application/vnd.oci.image.manifest.v1+json",
  "config": {"mediaType": "application/vnd.cncf.flux.config.v1+json", "size": 2, "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
  "layers": [{"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip", "size": @SIZE@, "digest": "@DIGEST@"}],
  "annotations": {"org.opencontainers.image.created": "2026-11-30T10:00:00Z", "org.opencontainers.image.revision": "main@sha1:0123"}
}`

// FuzzOCIArtifact resolves a tag of an OCI artifact and loads it from a
// registry on loopback serving the fuzzer's manifest (its media type in
// the Content-Type header; @DIGEST@ and @SIZE@ in it become those of the
// layer) and layer (the fuzzer's tar, gzipped). What loads must be the
// artifact the registry named: the revision is TAG@ the manifest's digest,
// the files unpack as FuzzUntar checks, and nothing is fetched from any
// other host.
func FuzzOCIArtifact(f *testing.F) {
	deploy := fuzzTar("deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
	oci := "application/vnd.oci.image.manifest.v1+json"
	f.Add(fuzzManifest, oci, deploy)
	f.Add(strings.Replace(fuzzManifest, "flux.content.v1.tar+gzip", "helm.chart.content.v1.tar+gzip", 1), oci, tarSeeds()[1])
	f.Add(strings.Replace(fuzzManifest, `"layers": [`, `"layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "size": 3, "digest": "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}, `, 1), oci, deploy)
	f.Add(strings.Replace(fuzzManifest, `"size": @SIZE@`, `"size": 999999999999`, 1), oci, deploy)
	f.Add(`{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "size": 7, "digest": "@DIGEST@"}]}`, "application/vnd.oci.image.index.v1+json", deploy)
	f.Add(`{"schemaVersion": 2, "layers": [{"mediaType": "x.tar+gzip", "size": @SIZE@, "digest": "@DIGEST@", "urls": ["http://169.254.169.254/latest"]}]}`, "application/vnd.docker.distribution.manifest.v2+json", tarSeeds()[2])
	f.Add(`{"schemaVersion": 1, "fsLayers": []}`, "application/vnd.docker.distribution.manifest.v1+prettyjws", deploy)
	f.Add(`not json`, "text/plain", []byte(nil))
	h := newHostile(f)
	url := "oci://" + h.srv.Listener.Addr().String() + "/app"
	f.Fuzz(func(t *testing.T, manifest, mediaType string, layer []byte) {
		blob := gz(layer)
		manifest = h.fill(manifest, blob)
		h.cur.Store(&served{manifest: manifest, manifestType: mediaType, blob: blob})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := Request{Kind: SourceOCI, URL: url, Ref: "v1",
			Artifact: &ArtifactSource{Insecure: true, Field: "spec.oci"}}
		tg, err := h.f.resolveOCI(ctx, &state{}, req)
		if err != nil {
			return
		}
		if want := "v1@" + digestOf([]byte(manifest)); tg.rev != want {
			t.Fatalf("revision %s, the registry serves %s", tg.rev, want)
		}
		fsys, dir, err := tg.load(ctx)
		if ctx.Err() != nil {
			t.Fatalf("loading the artifact took over 20s: %v", err)
		}
		if err != nil {
			return
		}
		if dir != "." {
			t.Fatalf("artifact folder %q", dir)
		}
		m := fsys.(*memFS)
		t.Logf("loaded %s: %d files", tg.rev, len(m.files))
		checkUnpacked(t, m.files, h.f.opts.MaxUnpackedBytes, h.f.opts.MaxFiles)
		want, err := untar(bytes.NewReader(blob))
		if err != nil || len(want) != len(m.files) {
			t.Fatalf("loaded %d files from a layer that unpacks to %d (%v)", len(m.files), len(want), err)
		}
	})
}

const fuzzIndex = `apiVersion: v1
entries:
  demo:
  - apiVersion: v2
    name: demo
    version: 0.2.0
    created: "2026-11-30T10:00:00Z"
    digest: @HEX@
    urls:
    - charts/demo-0.2.0.tgz
  - name: demo
    version: 0.1.0
    urls:
    - @SERVER@/charts/demo-0.1.0.tgz
  - name: demo
    version: 1.0.0-rc.1
    digest: @HEX@
    urls: [demo-1.0.0-rc.1.tgz]
  other:
  - name: other
    version: 9.9.9
    urls: [https://charts.example.com/other-9.9.9.tgz]
generated: "2026-11-30T10:00:00Z"
`

// FuzzHelmIndex resolves a chart in a chart repository on loopback
// serving the fuzzer's index.yaml (@HEX@ becomes the digest of the
// chart archive, @SERVER@ the server's URL) and the chart archive at
// every other path, in the fuzzer's semver range. A chart that resolves
// must be a version the index lists for that chart, in the range, with
// the digest of the archive the repository served or named; loading it
// gives a chart folder. Nothing is fetched from any other host.
func FuzzHelmIndex(f *testing.F) {
	chart := tarSeeds()[1]
	f.Add(fuzzIndex, "", chart)
	f.Add(fuzzIndex, "0.1.0", chart)
	f.Add(fuzzIndex, ">=0.1.0 <1", chart)
	f.Add(fuzzIndex, ">=1.0.0-0", chart)
	f.Add(strings.ReplaceAll(fuzzIndex, "charts/demo-0.2.0.tgz", "http://169.254.169.254/latest/meta-data"), "^0.2", chart)
	f.Add(strings.ReplaceAll(fuzzIndex, "charts/demo-0.2.0.tgz", "file:///etc/passwd"), "~0.2.0", chart)
	f.Add(strings.ReplaceAll(fuzzIndex, "digest: @HEX@", "digest: sha256:0000"), "*", chart)
	f.Add("entries:\n  demo: &a [{version: 1.0.0, urls: [x.tgz]}]\n  b: *a\n  c: [*a, *a, *a]\n", "", []byte("not a tar"))
	f.Add("entries: {demo: null}\n", "", chart)
	f.Add("{\"entries\": {\"demo\": [{\"version\": \"1.0.0\", \"urls\": []}]}}", "1.0.0", chart)
	f.Add(fuzzIndex, "not a range ||| ", chart)
	h := newHostile(f)
	f.Fuzz(func(t *testing.T, index, semverRange string, archive []byte) {
		blob := gz(archive)
		index = h.fill(index, blob)
		h.cur.Store(&served{index: index, blob: blob})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req := Request{Kind: SourceHelmRepository, URL: h.srv.URL, SemVer: semverRange,
			Artifact: &ArtifactSource{Chart: "demo", Insecure: true, Field: "spec.helmRepository"}}
		tg, err := h.f.resolveHelm(ctx, &state{}, req)
		if ctx.Err() != nil {
			t.Fatalf("resolving the chart took over 20s: %v", err)
		}
		if err != nil {
			return
		}
		chartName, version, digest, ok := parseChartRevision(tg.rev)
		if !ok || chartName != "demo" || len(digest) != len("sha256:")+64 {
			t.Fatalf("revision %q", tg.rev)
		}
		rng := semverRange
		if rng == "" {
			rng = "*" // any stable version
		}
		c, err := semver.NewConstraint(rng)
		v, err2 := semver.NewVersion(version)
		if err != nil || err2 != nil || !c.Check(v) {
			t.Fatalf("version %s resolved for range %q (%v, %v)", version, semverRange, err, err2)
		}
		fsys, dir, err := tg.load(ctx)
		if err != nil {
			return
		}
		if digest != digestOf(blob) {
			t.Fatalf("chart %s loaded, but the repository serves %s", tg.rev, digestOf(blob))
		}
		if _, err := fs.Stat(fsys, path.Join(dir, "Chart.yaml")); err != nil {
			t.Fatalf("chart folder %q: %v", dir, err)
		}
		t.Logf("loaded %s: chart in %q", tg.rev, dir)
	})
}
