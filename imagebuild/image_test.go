package imagebuild

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// A static Go binary with real dependencies to put in the images: the
// image builder itself, linked as `make build` links driftguard (the tests
// of test/image use driftguard itself).
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func staticBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "imagebuild-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "driftguard-image")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v0.0.0-unit", "-o", binPath, "../cmd/driftguard-image")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

var created = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func baseOptions(t *testing.T) Options {
	return Options{Binary: staticBinary(t), Version: "v1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567",
		Source: "https://github.com/driftguard/driftguard", Created: created}
}

// smallOptions are baseOptions with a small static binary (hello world),
// for the tests that build many images (gzip is slow under -race).
func smallOptions(t *testing.T) Options {
	o := baseOptions(t)
	smallOnce.Do(func() {
		dir, err := os.MkdirTemp(filepath.Dir(o.Binary), "small-")
		if err != nil {
			t.Fatal(err)
		}
		smallPath = buildTiny(t, dir, "hello", "package main\n\nfunc main() { println(\"hello\") }\n", "CGO_ENABLED=0", "GOOS=linux")
	})
	if smallPath == "" {
		t.Fatal("the small binary did not build")
	}
	o.Binary = smallPath
	return o
}

var (
	smallOnce sync.Once
	smallPath string
)

func digest(t *testing.T, o Options) (v1.Hash, []byte) {
	t.Helper()
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Image.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d, r.SBOM
}

// The same inputs give the same image digest and SBOM; each input that
// should show in the image changes the digest.
func TestBuildReproducible(t *testing.T) {
	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	var one bytes.Buffer
	for r := range bundle.Roots() {
		_ = pem.Encode(&one, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
		break
	}
	if err := os.WriteFile(pemFile, one.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	base := smallOptions(t)
	want, wantSBOM := digest(t, base)
	for _, tc := range []struct {
		name   string
		change func(*Options)
		same   bool
	}{
		{"same inputs", func(*Options) {}, true},
		{"same instant in another zone", func(o *Options) { o.Created = created.In(time.FixedZone("X", 3600)) }, true},
		{"another version", func(o *Options) { o.Version = "v1.2.4" }, false},
		{"another revision", func(o *Options) { o.Revision = strings.Repeat("f", 40) }, false},
		{"another creation time", func(o *Options) { o.Created = created.Add(time.Second) }, false},
		{"another CA bundle", func(o *Options) { o.CAFile = pemFile }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.change(&o)
			got, sbom := digest(t, o)
			if (got == want) != tc.same {
				t.Fatalf("digest %s, first build %s; want same=%v", got, want, tc.same)
			}
			if tc.same && !bytes.Equal(sbom, wantSBOM) {
				t.Fatal("the same inputs gave another SBOM")
			}
		})
	}
}

// What the tarball and the layout hold is the image built, byte for byte
// the same on a second write.
func TestWriteTarballAndLayout(t *testing.T) {
	dir := t.TempDir()
	tag, err := name.NewTag("registry.example/driftguard:v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	var sums []string
	var want v1.Hash
	for i := range 2 {
		r, err := Build(smallOptions(t))
		if err != nil {
			t.Fatal(err)
		}
		if want, err = r.Image.Digest(); err != nil {
			t.Fatal(err)
		}
		tarPath := filepath.Join(dir, fmt.Sprintf("img%d.tar", i))
		sbomPath := filepath.Join(dir, fmt.Sprintf("img%d.spdx.json", i))
		if err := r.WriteTarball(tarPath, tag, sbomPath); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(tarPath)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		sums = append(sums, hex.EncodeToString(s[:]))
		if sb, err := os.ReadFile(sbomPath); err != nil || !bytes.Equal(sb, r.SBOM) {
			t.Fatalf("SBOM beside the tarball: %v (equal %v)", err, bytes.Equal(sb, r.SBOM))
		}
		// docker save's manifest.json, as docker load reads it.
		img, err := tarball.ImageFromPath(tarPath, &tag)
		if err != nil {
			t.Fatal(err)
		}
		if cfg, err := img.ConfigName(); err != nil || cfg != mustConfigName(t, r.Image) {
			t.Fatalf("tarball image config %s, %v", cfg, err)
		}
		// The OCI layout in it: the very manifest built.
		unpacked := filepath.Join(dir, fmt.Sprintf("unpacked%d", i))
		if out, err := exec.Command("tar", "-xf", tarPath, "-C", mkdir(t, unpacked)).CombinedOutput(); err != nil {
			t.Fatalf("tar -xf: %v\n%s", err, out)
		}
		up, err := layout.FromPath(unpacked)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := up.Image(want); err != nil {
			t.Fatalf("the tarball's OCI layout has no image %s: %v", want, err)
		}
		lp := filepath.Join(dir, fmt.Sprintf("layout%d", i))
		if err := r.WriteLayout(lp, tag, ""); err != nil {
			t.Fatal(err)
		}
		p, err := layout.FromPath(lp)
		if err != nil {
			t.Fatal(err)
		}
		limg, err := p.Image(want)
		if err != nil {
			t.Fatalf("layout %s has no image %s: %v", lp, want, err)
		}
		if _, err := limg.ConfigFile(); err != nil {
			t.Fatal(err)
		}
	}
	if sums[0] != sums[1] {
		t.Fatalf("two tarballs of the same inputs differ: %s, %s", sums[0], sums[1])
	}
}

func mustConfigName(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	h, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// entry is a file of a layer.
type entry struct {
	hdr  *tar.Header
	data []byte
}

func layerFiles(t *testing.T, l v1.Layer) map[string]entry {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = entry{h, b}
	}
}

func TestBuildContent(t *testing.T) {
	o := baseOptions(t)
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := r.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/driftguard" || strings.Join(c.Cmd, " ") != "run" {
		t.Fatalf("config user %q entrypoint %q cmd %q", c.User, c.Entrypoint, c.Cmd)
	}
	wantLabels := map[string]string{
		LabelSource: o.Source, LabelVersion: o.Version, LabelRevision: o.Revision,
		LabelCreated: "2026-11-30T12:00:00Z", LabelTitle: "driftguard",
	}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if !cf.Created.Equal(created) || cf.OS != "linux" || cf.Architecture == "" {
		t.Errorf("config created %v os %q arch %q", cf.Created, cf.OS, cf.Architecture)
	}
	m, err := r.Image.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations[LabelRevision] != o.Revision || m.MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("manifest %s annotations %v", m.MediaType, m.Annotations)
	}

	layers, err := r.Image.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers %d, %v; want 2", len(layers), err)
	}
	base, app := layerFiles(t, layers[0]), layerFiles(t, layers[1])
	for _, files := range []map[string]entry{base, app} {
		for n, e := range files {
			if strings.HasPrefix(n, "bin/") || strings.HasPrefix(n, "usr/") || filepath.Base(n) == "sh" {
				t.Errorf("layer has %s: no shell, no programs but the guard", n)
			}
			if !e.hdr.ModTime.Equal(time.Unix(0, 0)) {
				t.Errorf("%s: mtime %v, want the epoch", n, e.hdr.ModTime)
			}
		}
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := app["driftguard"]; !ok || !bytes.Equal(e.data, bin) || e.hdr.Mode != 0o755 || e.hdr.Uid != 0 {
		t.Fatalf("binary layer: driftguard present %v, mode %o", ok, e.hdr.Mode)
	}
	if len(app) != 1 {
		t.Errorf("binary layer holds %d entries, want 1", len(app))
	}
	for _, tc := range []struct{ path, want string }{
		{"etc/passwd", "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{"etc/group", "nonroot:x:65532:\n"},
	} {
		if !strings.Contains(string(base[tc.path].data), tc.want) {
			t.Errorf("%s = %q, want a line %q", tc.path, base[tc.path].data, tc.want)
		}
	}
	if h := base["home/nonroot/"].hdr; h == nil || h.Uid != UID || h.Gid != GID || h.Typeflag != tar.TypeDir {
		t.Errorf("home/nonroot/: %+v", h)
	}
	if h := base["tmp/"].hdr; h == nil || h.Mode != 0o1777 {
		t.Errorf("tmp/: %+v", h)
	}
	ca := base["etc/ssl/certs/ca-certificates.crt"].data
	if !bytes.Equal(ca, CABundle()) {
		t.Error("the CA file is not CABundle()")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Error("the CA file does not parse")
	}
}

// CABundle has every unconstrained root of the module, and no root that
// the NSS store trusts only until a date.
func TestCABundle(t *testing.T) {
	want := map[string]bool{}
	constrained := map[string]bool{}
	for r := range bundle.Roots() {
		s := sha256.Sum256(r.Certificate)
		if r.Constraint != nil {
			constrained[hex.EncodeToString(s[:])] = true
		} else {
			want[hex.EncodeToString(s[:])] = true
		}
	}
	got := map[string]bool{}
	rest := CABundle()
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b.Bytes)
		got[hex.EncodeToString(s[:])] = true
	}
	if len(want) < 100 || len(got) != len(want) {
		t.Fatalf("%d roots in the bundle, %d unconstrained in the module", len(got), len(want))
	}
	for h := range got {
		if !want[h] || constrained[h] {
			t.Fatalf("root %s should not be in the bundle", h)
		}
	}
}

// The SBOM lists every module `go version -m` shows for the binary, with
// its version and go.sum hash, and the checksums of the binary and the CA
// file.
func TestSBOM(t *testing.T) {
	o := baseOptions(t)
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDocument
	if err := json.Unmarshal(r.SBOM, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-11-30T12:00:00Z" {
		t.Fatalf("document %s created %s", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	byID := map[string]spdxPackage{}
	byName := map[string]spdxPackage{}
	for _, p := range doc.Packages {
		if _, dup := byID[p.SPDXID]; dup {
			t.Fatalf("SPDXID %s twice", p.SPDXID)
		}
		byID[p.SPDXID] = p
		byName[p.Name] = p
	}
	info, err := buildinfo.ReadFile(o.Binary)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Deps) < 10 {
		t.Fatalf("the binary links %d modules", len(info.Deps))
	}
	for _, d := range info.Deps {
		m := d
		if d.Replace != nil && !isLocalPath(d.Replace.Path) {
			m = d.Replace
		}
		p, ok := byName[m.Path]
		if !ok {
			t.Errorf("module %s missing", m.Path)
			continue
		}
		if p.VersionInfo != m.Version {
			t.Errorf("module %s version %q, want %q", m.Path, p.VersionInfo, m.Version)
		}
		if m.Sum != "" {
			raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(m.Sum, "h1:"))
			if len(p.Checksums) != 1 || p.Checksums[0].ChecksumValue != hex.EncodeToString(raw) {
				t.Errorf("module %s checksums %v, want the hex of %s", m.Path, p.Checksums, m.Sum)
			}
		}
		if len(p.ExternalRefs) != 1 || p.ExternalRefs[0].ReferenceLocator != "pkg:golang/"+m.Path+"@"+strings.ReplaceAll(m.Version, "+", "%2B") {
			t.Errorf("module %s purl %v", m.Path, p.ExternalRefs)
		}
	}
	bin, _ := os.ReadFile(o.Binary)
	binSum := sha256.Sum256(bin)
	if p := byID[spdxBinary]; len(p.Checksums) != 1 || p.Checksums[0].ChecksumValue != hex.EncodeToString(binSum[:]) || p.VersionInfo != o.Version {
		t.Errorf("binary package %+v", p)
	}
	caSum := sha256.Sum256(CABundle())
	if p := byID[spdxCA]; len(p.Checksums) != 1 || p.Checksums[0].ChecksumValue != hex.EncodeToString(caSum[:]) {
		t.Errorf("CA package %+v", p)
	}
	if p := byID[spdxStdlib]; p.VersionInfo != info.GoVersion {
		t.Errorf("stdlib %q, binary built by %s", p.VersionInfo, info.GoVersion)
	}
	deps := 0
	for _, rel := range doc.Relationships {
		if _, ok := byID[rel.Related]; !ok {
			t.Errorf("relationship to unknown %s", rel.Related)
		}
		if rel.Element == spdxBinary && rel.Type == "DEPENDS_ON" {
			deps++
		}
	}
	if deps != len(info.Deps)+1 {
		t.Errorf("%d DEPENDS_ON relationships, want %d modules and the standard library", deps, len(info.Deps))
	}
}

func TestBuildRefuses(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noCert := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(noCert, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Go binaries an empty base cannot run, or that say they may need libc.
	plain := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hi\") }\n"
	withC := "package main\n\n// int two(void) { return 2; }\nimport \"C\"\n\nfunc main() { println(C.two()) }\n"
	cgoStatic := buildTiny(t, dir, "cgo-static", plain, "CGO_ENABLED=1")
	cgoDynamic := buildTiny(t, dir, "cgo-dynamic", withC, "CGO_ENABLED=1")
	base := baseOptions(t)
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"no binary", func(o *Options) { o.Binary = "" }, "no binary given"},
		{"linked dynamically", func(o *Options) { o.Binary = cgoDynamic }, "linked dynamically"},
		{"built with cgo", func(o *Options) { o.Binary = cgoStatic }, "built with CGO_ENABLED=1"},
		{"missing binary", func(o *Options) { o.Binary = filepath.Join(dir, "nope") }, "reading the binary"},
		{"not ELF", func(o *Options) { o.Binary = text }, "not an ELF binary"},
		{"no creation time", func(o *Options) { o.Created = time.Time{} }, "no creation time"},
		{"CA file without certificates", func(o *Options) { o.CAFile = noCert }, "holds no PEM certificate"},
		{"missing CA file", func(o *Options) { o.CAFile = filepath.Join(dir, "nope.pem") }, "-ca-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.change(&o)
			_, err := Build(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Build = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// buildTiny builds a one-file program with env and returns its path.
func buildTiny(t *testing.T, dir, name, src string, env ...string) string {
	t.Helper()
	mod := filepath.Join(dir, name+"-src")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, c := range map[string]string{"go.mod": "module example.com/" + name + "\n\ngo 1.26\n", "main.go": src} {
		if err := os.WriteFile(filepath.Join(mod, f), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), append([]string{"GOFLAGS=-mod=mod", "GOWORK=off"}, env...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	return out
}
