package sourceserver

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/driftguard/driftguard/source"
)

// Registry is an OCI distribution registry on loopback, plain HTTP.
type Registry struct {
	*Front
}

// StartRegistry starts an empty registry.
func StartRegistry() (*Registry, error) {
	f, err := NewFront(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	if err != nil {
		return nil, err
	}
	return &Registry{Front: f}, nil
}

// URL is the oci:// URL of a repository of the registry.
func (r *Registry) URL(repo string) string { return "oci://" + r.Addr() + "/" + repo }

func (r *Registry) auth() authn.Authenticator {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.user == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: r.user, Password: r.pass}
}

// PushFiles pushes files (path → content) as an artifact to repo:tag, the
// way driftguard push artifact does, and returns the manifest digest.
func (r *Registry) PushFiles(ctx context.Context, repo, tag string, files map[string]string) (string, error) {
	dir, err := os.MkdirTemp("", "sourceserver-push-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			return "", err
		}
	}
	ref, err := source.Push(ctx, dir, r.URL(repo)+":"+tag, source.PushOptions{Insecure: true, Auth: r.auth(), Source: "sourceserver", Revision: tag})
	if err != nil {
		return "", err
	}
	_, digest, _ := strings.Cut(ref, "@")
	return digest, nil
}

// PushCorrupt pushes to repo:tag an artifact whose layer claims to be a
// tar+gzip but is not one, and returns the manifest digest.
func (r *Registry) PushCorrupt(ctx context.Context, repo, tag string) (string, error) {
	ref, err := name.NewTag(r.Addr()+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return "", err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, source.FluxConfigMediaType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer([]byte("this is not a gzip archive\n"), source.FluxContentMediaType)})
	if err != nil {
		return "", err
	}
	if err := remote.Write(ref, img, remote.WithAuth(r.auth()), remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	return d.String(), err
}
