package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations of a pushed artifact, from the OCI image spec, as Flux sets them.
const (
	AnnotationCreated  = "org.opencontainers.image.created"
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRevision = "org.opencontainers.image.revision"
)

// PushOptions say how a folder is published as an OCI artifact.
type PushOptions struct {
	// Source and Revision are recorded as annotations (where the files
	// come from: a Git URL and commit, say).
	Source, Revision string
	// Created is recorded as an annotation; zero means now.
	Created time.Time
	// Insecure allows plain HTTP to the registry.
	Insecure bool
	// Auth for the registry; nil means the Docker config's credentials
	// (~/.docker/config.json), or none.
	Auth authn.Authenticator
}

// Push packages the files below dir (Package) as an OCI artifact the way
// flux push artifact does, a manifest with config media type
// FluxConfigMediaType and one layer of FluxContentMediaType, pushes it to
// ref (oci://REGISTRY/REPOSITORY:TAG, or without oci://) and returns the
// reference with its digest.
func Push(ctx context.Context, dir, ref string, o PushOptions) (string, error) {
	a := &ArtifactSource{Insecure: o.Insecure} // no Field: messages name --insecure
	tag, err := name.NewTag(strings.TrimPrefix(ref, "oci://"), nameOptions(a)...)
	if err != nil {
		return "", fmt.Errorf("artifact reference %q: %w", ref, err)
	}
	var buf bytes.Buffer
	if err := Package(dir, &buf); err != nil {
		return "", err
	}
	created := o.Created
	if created.IsZero() {
		created = time.Now()
	}
	anns := map[string]string{AnnotationCreated: created.UTC().Format(time.RFC3339)}
	if o.Source != "" {
		anns[AnnotationSource] = o.Source
	}
	if o.Revision != "" {
		anns[AnnotationRevision] = o.Revision
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, FluxConfigMediaType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(buf.Bytes(), FluxContentMediaType)})
	if err != nil {
		return "", fmt.Errorf("build artifact: %w", err)
	}
	img = mutate.Annotations(img, anns).(v1.Image)
	digest, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("build artifact: %w", err)
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if o.Auth != nil {
		auth = remote.WithAuth(o.Auth)
	}
	opts := append(registryOptions(newTransport(), auth, a), remote.WithContext(ctx))
	if err := remote.Write(tag, img, opts...); err != nil {
		return "", fmt.Errorf("push %s: %w", tag, explainPush(err, o.Insecure))
	}
	return "oci://" + tag.String() + "@" + digest.String(), nil
}

func explainPush(err error, insecure bool) error {
	var pe *plainHTTPError
	if !errors.As(err, &pe) && !insecure && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return fmt.Errorf("%w; the registry speaks plain HTTP: pass --insecure", err)
	}
	return err
}

// Package writes the files below dir as a tar.gz archive: paths relative
// to dir, folders .git left out, owner root, file modes 0644 (0755 when
// executable), no times, so that the same files make the same archive. A
// symlink or other special file is an error naming it.
func Package(dir string, w io.Writer) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("package %s: not a folder", dir)
	}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		hdr := &tar.Header{Name: rel, Format: tar.FormatPAX, ModTime: time.Unix(0, 0)}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, rel+"/", 0o755
			return tw.WriteHeader(hdr)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s): an artifact holds files only", p, d.Type())
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, fi.Size(), 0o644
		if fi.Mode()&0o111 != 0 {
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		fh, err := os.Open(p)
		if err != nil {
			return err
		}
		defer fh.Close()
		_, err = io.CopyN(tw, fh, fi.Size())
		return err
	})
	if err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("package %s: %w", dir, err)
	}
	return nil
}
