// Package imagebuild builds driftguard's container image without a
// container engine: the static binary on an empty base, with CA
// certificates and a non-root user, an OCI image assembled in Go
// (go-containerregistry), and an SPDX SBOM of what is in it. The same
// binary and options give the same image digest and the same SBOM bytes.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds, and who runs it (the uid/gid distroless and ko call
// nonroot).
const (
	BinaryPath = "/driftguard"
	CAPath     = "/etc/ssl/certs/ca-certificates.crt"
	HomeDir    = "/home/nonroot"
	UID        = 65532
	GID        = 65532
	User       = "65532:65532"
)

// OCI annotation keys (image-spec annotations.md), set both as config labels
// and as manifest annotations.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
)

// fileTime is the modification time of every file in the image: fixed, so
// that the layers (and their digests) depend only on the content.
var fileTime = time.Unix(0, 0).UTC()

// Options say what goes into the image.
type Options struct {
	// Binary is the path of the driftguard binary: a static Go binary
	// (CGO_ENABLED=0), as `make build` links it.
	Binary string
	// Version, Revision and Source become the OCI labels version, revision
	// and source; Version is also the SBOM's version of driftguard.
	Version  string
	Revision string
	Source   string
	// Created is the image's creation time (config, history, the created
	// label, the SBOM): the commit time, for a reproducible image. Required.
	Created time.Time
	// CAFile is a PEM bundle of CA certificates to put at CAPath. Empty:
	// the Mozilla roots that Go's golang.org/x/crypto/x509roots/fallback
	// module carries, at the version go.mod pins (see CABundle).
	CAFile string
}

// Result is a built image and its SBOM.
type Result struct {
	Image v1.Image
	// SBOM is an SPDX 2.3 JSON document of the image's content.
	SBOM []byte
	// Platform is the binary's GOOS/GOARCH, which the image's config names.
	Platform v1.Platform
}

// Build assembles the image: one layer with /etc/passwd, /etc/group, the CA
// bundle, /home/nonroot and /tmp; one with the binary. Nothing is written
// anywhere; see WriteTarball, WriteLayout and Push.
func Build(o Options) (*Result, error) {
	if o.Binary == "" {
		return nil, errors.New("imagebuild: no binary given (-binary)")
	}
	if o.Created.IsZero() {
		return nil, errors.New("imagebuild: no creation time given (-created, the commit time)")
	}
	created := o.Created.UTC().Truncate(time.Second)
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: reading the binary: %w", err)
	}
	info, platform, err := inspectBinary(o.Binary, bin)
	if err != nil {
		return nil, err
	}
	ca, caSource, err := caBundle(o.CAFile)
	if err != nil {
		return nil, err
	}

	base, err := layer(baseFiles(ca))
	if err != nil {
		return nil, fmt.Errorf("imagebuild: base layer: %w", err)
	}
	app, err := layer([]file{{name: BinaryPath, mode: 0o755, data: bin}})
	if err != nil {
		return nil, fmt.Errorf("imagebuild: binary layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: created},
			CreatedBy: "imagebuild: /etc/passwd and /etc/group (nonroot 65532), " + CAPath + " (" + caSource + "), " + HomeDir + ", /tmp"}},
		mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: created},
			CreatedBy: "imagebuild: " + BinaryPath + " (driftguard " + o.Version + ")"}},
	)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: adding layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: config: %w", err)
	}
	cf = cf.DeepCopy()
	labels := o.labels(created)
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture, cf.Variant = platform.OS, platform.Architecture, platform.Variant
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"run"},
		WorkingDir: HomeDir,
		Env: []string{
			"PATH=/",
			"HOME=" + HomeDir,
			"SSL_CERT_FILE=" + CAPath,
		},
		Labels: labels,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("imagebuild: config: %w", err)
	}
	img = mutate.Annotations(img, labels).(v1.Image)

	sbom, err := spdx(sbomInput{
		info: info, binary: bin, version: o.Version, revision: o.Revision, source: o.Source,
		created: created, ca: ca, caSource: caSource,
	})
	if err != nil {
		return nil, err
	}
	return &Result{Image: img, SBOM: sbom, Platform: platform}, nil
}

// labels are the image's OCI labels (and manifest annotations), those
// with a value.
func (o Options) labels(created time.Time) map[string]string {
	labels := map[string]string{
		LabelTitle:    "driftguard",
		LabelSource:   o.Source,
		LabelVersion:  o.Version,
		LabelRevision: o.Revision,
		LabelCreated:  created.Format(time.RFC3339),
	}
	for k, v := range labels {
		if v == "" {
			delete(labels, k)
		}
	}
	return labels
}

// inspectBinary checks that bin is a static Go ELF binary (an empty base has
// no dynamic loader and no libc) and returns its build info and platform.
func inspectBinary(name string, bin []byte) (*buildinfo.BuildInfo, v1.Platform, error) {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return nil, v1.Platform{}, fmt.Errorf("imagebuild: %s is not an ELF binary: %w", name, err)
	}
	defer func() { _ = f.Close() }() // reads a byte slice: nothing to fail
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, v1.Platform{}, fmt.Errorf("imagebuild: %s is linked dynamically (it names a program interpreter); build it with CGO_ENABLED=0", name)
		}
	}
	info, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		return nil, v1.Platform{}, fmt.Errorf("imagebuild: %s has no Go build info: %w", name, err)
	}
	p := v1.Platform{OS: "linux"}
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS":
			p.OS = s.Value
		case "GOARCH":
			p.Architecture = s.Value
		case "GOARM":
			p.Variant = "v" + s.Value
		case "CGO_ENABLED":
			if s.Value == "1" {
				return nil, v1.Platform{}, fmt.Errorf("imagebuild: %s was built with CGO_ENABLED=1; build it with CGO_ENABLED=0", name)
			}
		}
	}
	if p.OS != "linux" {
		return nil, v1.Platform{}, fmt.Errorf("imagebuild: %s is built for GOOS=%s; the image needs linux", name, p.OS)
	}
	if p.Architecture == "" {
		return nil, v1.Platform{}, fmt.Errorf("imagebuild: %s: its build info names no GOARCH", name)
	}
	return info, p, nil
}

// file is one entry of a layer; a name ending in / is a folder.
type file struct {
	name     string
	mode     int64
	uid, gid int
	data     []byte
}

// baseFiles are what distroless's static nonroot image provides that the
// guard uses: the user and group databases, the CA bundle, a home folder
// and /tmp. No shell, no package manager, no other programs.
func baseFiles(ca []byte) []file {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, GID, HomeDir)
	group := "root:x:0:\n" + fmt.Sprintf("nonroot:x:%d:\n", GID)
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: CAPath[1:], mode: 0o644, data: ca},
		{name: "home/", mode: 0o755},
		{name: HomeDir[1:] + "/", mode: 0o700, uid: UID, gid: GID},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
	}
}

// layer writes files, in the order given, as a tar with fixed times and
// owners, and returns it as a gzip-compressed OCI layer.
func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		name := f.name
		if name[0] == '/' {
			name = name[1:]
		}
		h := &tar.Header{
			Name: name, Mode: f.mode, Uid: f.uid, Gid: f.gid,
			ModTime: fileTime, Format: tar.FormatPAX,
		}
		if name[len(name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", name, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
