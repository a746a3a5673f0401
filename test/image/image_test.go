// Package image builds driftguard's container image as `make image` does
// (cmd/driftguard-image, no container engine), pushes it to a registry on
// loopback (go-containerregistry's registry code), pulls it back and checks
// what a cluster would run: the config (user 65532, entrypoint, OCI labels),
// no shell in any layer, the SBOM referrer, and the binary taken out of its
// layer, which prints its version and runs `driftguard run` against a real
// API server until it is healthy.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/imagebuild"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/sourceserver"
)

var (
	cluster         *devenv.Cluster
	guardKubeconfig string
	workDir         string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if missing := devenv.MissingBinaries("", false); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "image: %v missing in %s: run tools/build.sh\n", missing, devenv.DefaultBinDir())
		return 1
	}
	var err error
	if workDir, err = os.MkdirTemp("", "driftguard-image-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(workDir)
	crds := filepath.Join(workDir, "crds")
	if err := config.WriteCRDs(crds); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		return 1
	}
	logFile, err := os.Create(filepath.Join(workDir, "test.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer logFile.Close()
	log := zap.New(zap.WriteTo(logFile))
	ctrllog.SetLogger(log)
	if cluster, err = devenv.Start(context.Background(), devenv.Options{CRDDirs: []string{crds}, Dir: filepath.Join(workDir, "cluster"), Log: log}); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		return 1
	}
	defer cluster.Stop()
	if guardKubeconfig, _, err = cluster.AddUser("driftguard", []string{"system:masters"}); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		return 1
	}
	return m.Run()
}

const (
	version  = "v0.0.0-imagetest"
	revision = "0123456789abcdef0123456789abcdef01234567"
	created  = "1764849600" // 2025-12-04T12:00:00Z
)

// goBuild builds a package of this module into dir with the flags `make
// build` uses (static, -trimpath, -s -w, the version stamped).
func goBuild(t *testing.T, dir, pkg, out string) string {
	t.Helper()
	root, err := harness.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, out)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", path, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return path
}

// buildImage runs the image builder as `make image` does, with the
// destination flags given, and returns its output.
func buildImage(t *testing.T, builder, binary string, dest ...string) string {
	t.Helper()
	args := append([]string{"--binary", binary, "--version", version, "--revision", revision, "--created", created}, dest...)
	cmd := exec.Command(builder, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir()) // no credentials of the machine's
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("driftguard-image %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestImage(t *testing.T) {
	dir := t.TempDir()
	binary := goBuild(t, dir, "./cmd/driftguard", "driftguard")
	builder := goBuild(t, dir, "./cmd/driftguard-image", "driftguard-image")

	reg, err := sourceserver.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	ref, err := name.NewTag(reg.Addr()+"/driftguard/driftguard:"+version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}

	// Written to a tarball first, then pushed by a second run: the same
	// inputs give the same digest.
	tarPath := filepath.Join(dir, "driftguard-image.tar")
	buildImage(t, builder, binary, "--tarball", tarPath, "--tag", ref.Name())
	fileSBOM, err := os.ReadFile(filepath.Join(dir, "driftguard-image.spdx.json"))
	if err != nil {
		t.Fatalf("no SBOM beside the tarball: %v", err)
	}
	tarDigest := ociArchiveDigest(t, tarPath, filepath.Join(dir, "unpacked"))
	out := buildImage(t, builder, binary, "--push", ref.Name(), "--insecure")
	if !strings.Contains(out, ref.Name()+"@"+tarDigest.String()) {
		t.Fatalf("pushed %q; the tarball holds %s (same inputs, same digest)", out, tarDigest)
	}

	// Pulled back as a cluster would.
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if d, err := img.Digest(); err != nil || d != tarDigest {
		t.Fatalf("pulled %s, %v; pushed %s", d, err, tarDigest)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || strings.Join(c.Entrypoint, " ") != "/driftguard" || strings.Join(c.Cmd, " ") != "run" {
		t.Errorf("config: user %q, entrypoint %q, cmd %q", c.User, c.Entrypoint, c.Cmd)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/driftguard/driftguard",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  "2025-12-04T12:00:00Z",
	} {
		if c.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], want)
		}
	}
	if cf.Created.UTC().Format(time.RFC3339) != "2025-12-04T12:00:00Z" || cf.OS != "linux" {
		t.Errorf("config created %v, os %q", cf.Created, cf.OS)
	}

	// No shell, no programs: the guard is the only executable in the image.
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	guard := filepath.Join(dir, "from-image", "driftguard")
	var executables []string
	var passwd string
	for _, l := range layers {
		eachFile(t, l, func(h *tar.Header, r io.Reader) {
			n := strings.TrimPrefix(h.Name, "./")
			if n == "bin/sh" || strings.HasSuffix(n, "/sh") || strings.HasPrefix(n, "bin/") || strings.HasPrefix(n, "usr/") {
				t.Errorf("the image has %s", n)
			}
			if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 {
				executables = append(executables, n)
			}
			if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
				t.Errorf("the image has a link %s -> %s", n, h.Linkname)
			}
			switch n {
			case "driftguard":
				writeFile(t, guard, r, 0o755)
			case "etc/passwd":
				b, _ := io.ReadAll(r)
				passwd = string(b)
			}
		})
	}
	if strings.Join(executables, " ") != "driftguard" {
		t.Errorf("executables in the image: %v, want only driftguard", executables)
	}
	if !strings.Contains(passwd, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd = %q, want the nonroot user 65532", passwd)
	}

	// The SBOM, as a referrer of the image, is the file beside the tarball.
	digest, _ := img.Digest()
	idx, err := remote.Referrers(ref.Context().Digest(digest.String()))
	if err != nil {
		t.Fatalf("referrers of %s: %v", digest, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].ArtifactType != imagebuild.SBOMMediaType {
		t.Fatalf("referrers of the image: %+v, want one %s", im.Manifests, imagebuild.SBOMMediaType)
	}
	sbomImg, err := remote.Image(ref.Context().Digest(im.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	sbomLayers, err := sbomImg.Layers()
	if err != nil || len(sbomLayers) != 1 {
		t.Fatalf("SBOM layers %d, %v", len(sbomLayers), err)
	}
	rc, err := sbomLayers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	pushedSBOM, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(pushedSBOM, fileSBOM) {
		t.Fatalf("the pushed SBOM differs from the file beside the tarball (%v)", err)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(pushedSBOM, &doc); err != nil || doc.SPDXVersion != "SPDX-2.3" {
		t.Fatalf("SBOM: %v, version %q", err, doc.SPDXVersion)
	}
	found := false
	for _, p := range doc.Packages {
		found = found || p.Name == "sigs.k8s.io/controller-runtime" && p.VersionInfo != ""
	}
	if !found {
		t.Error("the SBOM does not list sigs.k8s.io/controller-runtime")
	}

	// The binary from the layer: its version, then the guard itself.
	vout, err := exec.Command(guard, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(vout), "driftguard "+version+" ") {
		t.Fatalf("driftguard version: %q, %v", vout, err)
	}
	p, err := harness.StartProcess(harness.ProcessOptions{
		Binary: guard, Kubeconfig: guardKubeconfig, Dir: filepath.Join(dir, "guard"),
		WebhookConfigName: "driftguard-image", Args: []string{"--audit-events=false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill() })
	if err := p.WaitHealthy(90 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if done, err := p.Exited(); !done || !strings.Contains(err.Error(), "exited: <nil>") {
		t.Fatalf("the guard did not stop cleanly on SIGTERM: %v (log %s)", err, p.LogPath)
	}
}

// ociArchiveDigest unpacks an OCI archive into dir and returns the digest
// of the one image its index names.
func ociArchiveDigest(t *testing.T, archive, dir string) v1.Hash {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("tar", "-xf", archive, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar -xf %s: %v\n%s", archive, err, out)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("the archive's index names %d images, want 1", len(im.Manifests))
	}
	return im.Manifests[0].Digest
}

func eachFile(t *testing.T, l v1.Layer, fn func(*tar.Header, io.Reader)) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(h, tr)
	}
}

func writeFile(t *testing.T, path string, r io.Reader, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
