package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteTarball writes the image as an OCI archive: a tar of an OCI image
// layout (oci-layout, index.json naming ref, blobs/sha256/) with a
// manifest.json beside it as docker save writes one, so that `docker load`,
// `podman load`, `skopeo copy oci-archive:` and crane read it and the
// manifest (and digest) stays the one pushed. The tar is reproducible: files
// in name order, fixed times and owners. The SBOM goes to sbomPath.
func (r *Result) WriteTarball(path string, ref name.Tag, sbomPath string) error {
	dir, err := os.MkdirTemp("", "imagebuild-layout-")
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("imagebuild: OCI layout: %w", err)
	}
	if err := p.AppendImage(r.Image, layout.WithAnnotations(refAnnotations(ref)), layout.WithPlatform(r.Platform)); err != nil {
		return fmt.Errorf("imagebuild: OCI layout: %w", err)
	}
	if err := writeDockerManifest(dir, r.Image, ref); err != nil {
		return err
	}
	if err := tarFolder(dir, path); err != nil {
		return fmt.Errorf("imagebuild: writing %s: %w", path, err)
	}
	return r.writeSBOM(sbomPath)
}

// refAnnotations name the image in an OCI layout's index: the tag (the
// image spec's ref.name) and the whole reference (as containerd and docker
// read it).
func refAnnotations(ref name.Tag) map[string]string {
	return map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.Name(),
	}
}

// writeDockerManifest writes docker save's manifest.json into an OCI layout
// folder, pointing at the layout's blobs.
func writeDockerManifest(dir string, img v1.Image, ref name.Tag) error {
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	entry := struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{Config: "blobs/sha256/" + m.Config.Digest.Hex, RepoTags: []string{ref.Name()}}
	for _, l := range m.Layers {
		entry.Layers = append(entry.Layers, "blobs/sha256/"+l.Digest.Hex)
	}
	b, err := json.Marshal([]any{entry})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644)
}

// tarFolder writes the files below dir into a tar at out, in name order,
// with fixed times and owners.
func tarFolder(dir, out string) (retErr error) {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if err := f.Close(); err != nil && retErr == nil {
			retErr = err
		}
	}()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: fileTime, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Mode, h.Name = tar.TypeDir, 0o755, h.Name+"/"
			return tw.WriteHeader(h)
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		fi, err := src.Stat()
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, fi.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// WriteLayout writes the image into an OCI image layout folder (created if
// missing; the image is appended to its index, annotated with ref's tag) and
// the SBOM to sbomPath.
func (r *Result) WriteLayout(dir string, ref name.Tag, sbomPath string) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("imagebuild: creating the OCI layout %s: %w", dir, err)
		}
	}
	if err := p.AppendImage(r.Image, layout.WithAnnotations(refAnnotations(ref)), layout.WithPlatform(r.Platform)); err != nil {
		return fmt.Errorf("imagebuild: writing into the OCI layout %s: %w", dir, err)
	}
	return r.writeSBOM(sbomPath)
}

func (r *Result) writeSBOM(path string) error {
	if path == "" {
		return nil
	}
	if err := os.WriteFile(path, r.SBOM, 0o644); err != nil {
		return fmt.Errorf("imagebuild: writing the SBOM: %w", err)
	}
	return nil
}

// Pushed says where a push put the image and its SBOM.
type Pushed struct {
	Image v1.Hash // the image manifest's digest
	SBOM  v1.Hash // the digest of the SBOM's referrer manifest
}

// Push pushes the image to ref, then the SBOM as an OCI referrer of it: an
// artifact manifest (artifactType application/spdx+json, the empty config,
// the SBOM as its one layer) whose subject is the image. A registry with the
// referrers API lists it there; for one without, go-containerregistry keeps
// the referrers tag schema (the index tagged sha256-<image digest hex>).
func (r *Result) Push(ctx context.Context, ref name.Reference, auth authn.Keychain) (Pushed, error) {
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(auth)}
	var out Pushed
	if err := remote.Write(ref, r.Image, opts...); err != nil {
		return out, fmt.Errorf("imagebuild: pushing %s: %w", ref, err)
	}
	var err error
	if out.Image, err = r.Image.Digest(); err != nil {
		return out, err
	}
	mf, err := r.Image.RawManifest()
	if err != nil {
		return out, err
	}
	subject := v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: out.Image, Size: int64(len(mf))}
	raw, err := sbomManifest(r.SBOM, subject)
	if err != nil {
		return out, err
	}
	repo := ref.Context()
	for _, blob := range []v1.Layer{static.NewLayer([]byte("{}"), types.OCIEmptyJSON), static.NewLayer(r.SBOM, SBOMMediaType)} {
		if err := remote.WriteLayer(repo, blob, opts...); err != nil {
			return out, fmt.Errorf("imagebuild: pushing the SBOM to %s: %w", repo, err)
		}
	}
	h, _, err := v1.SHA256(bytesReader(raw))
	if err != nil {
		return out, err
	}
	if err := remote.Put(repo.Digest(h.String()), rawManifest(raw), opts...); err != nil {
		return out, fmt.Errorf("imagebuild: pushing the SBOM manifest to %s: %w", repo, err)
	}
	out.SBOM = h
	return out, nil
}

// sbomManifest is the OCI 1.1 artifact manifest that carries the SBOM and
// refers to subject.
func sbomManifest(sbom []byte, subject v1.Descriptor) ([]byte, error) {
	emptyCfg := []byte("{}")
	cfgHash, _, err := v1.SHA256(bytesReader(emptyCfg))
	if err != nil {
		return nil, err
	}
	sbomHash, _, err := v1.SHA256(bytesReader(sbom))
	if err != nil {
		return nil, err
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  SBOMMediaType,
		Config:        v1.Descriptor{MediaType: types.OCIEmptyJSON, Digest: cfgHash, Size: int64(len(emptyCfg))},
		Layers:        []v1.Descriptor{{MediaType: SBOMMediaType, Digest: sbomHash, Size: int64(len(sbom))}},
		Subject:       &subject,
	}
	return json.Marshal(m)
}

// rawManifest is a manifest pushed as it is.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
