package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// Media types of artifacts, as Flux and Helm name them.
const (
	// FluxConfigMediaType is the config of an artifact of manifests.
	FluxConfigMediaType types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	// FluxContentMediaType is its layer: a tar+gzip of the files.
	FluxContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// HelmChartMediaType is the layer of a chart pushed with helm push.
	HelmChartMediaType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// ociState is what the Fetcher keeps of an OCI source.
type ociState struct {
	client *registryClient
}

// resolveOCI asks the registry for the digest of the tag (one manifest
// HEAD), of the highest tag in the semver range (a tag list, then the
// HEAD), or takes the digest asked for.
func (f *Fetcher) resolveOCI(ctx context.Context, st *state, req Request) (target, error) {
	a := req.Artifact
	repo, err := name.NewRepository(strings.TrimPrefix(req.URL, "oci://"), nameOptions(a)...)
	if err != nil {
		return target{}, fmt.Errorf("%s.url: %w", a.Field, err)
	}
	if st.oci == nil {
		st.oci = &ociState{}
	}
	p, err := f.puller(&st.oci.client, repo.RegistryStr(), a)
	if err != nil {
		return target{}, err
	}
	tag, digest := splitOCIRef(req.Ref)
	if req.SemVer != "" && digest == "" {
		tags, err := p.List(ctx, repo)
		if err != nil {
			return target{}, fmt.Errorf("list tags: %w", explainRegistry(err, a))
		}
		if tag, err = highestVersion(tags, req.SemVer, same, "tag"); err != nil {
			return target{}, err
		}
	} else if tag == "" && digest == "" {
		tag = "latest"
	}
	if digest == "" {
		if digest, err = headDigest(ctx, p, repo.Tag(tag), a); err != nil {
			return target{}, err
		}
	}
	rev := digest
	if tag != "" {
		rev = tag + "@" + digest
	}
	ref := repo.Digest(digest)
	what := redact.URL(req.URL) + "@" + digest
	if tag != "" {
		what = redact.URL(req.URL) + ":" + rev
	}
	return target{rev: rev, load: func(ctx context.Context) (fs.FS, string, error) {
		files, created, err := f.pullArtifact(ctx, st.key, p, ref, a, what, func(mt types.MediaType) bool {
			return mt == FluxContentMediaType || strings.HasSuffix(string(mt), "tar+gzip") || strings.HasSuffix(string(mt), ".tar.gzip")
		})
		if err != nil {
			return nil, "", err
		}
		return newMemFS(files, created), ".", nil
	}}, nil
}

// splitOCIRef reads a tag, a digest, or a revision TAG@DIGEST.
func splitOCIRef(ref string) (tag, digest string) {
	if t, d, ok := strings.Cut(ref, "@"); ok {
		return t, d
	}
	if strings.HasPrefix(ref, "sha256:") {
		return "", ref
	}
	return ref, ""
}

// headDigest asks for the digest of a tag's manifest.
func headDigest(ctx context.Context, p *remote.Puller, ref name.Tag, a *ArtifactSource) (string, error) {
	desc, err := p.Head(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("tag %s: %w", ref.TagStr(), explainRegistry(err, a))
	}
	return desc.Digest.String(), nil
}

// pullArtifact downloads the manifest ref and the first layer whose media
// type wants accepts (kept by digest for owner, the source with its
// credentials, and downloaded once), and unpacks it.
// A manifest or layer that is not what it must be is a
// *render.RenderError naming the artifact (what). created is the time
// the manifest says the artifact was made, else the zero time.
func (f *Fetcher) pullArtifact(ctx context.Context, owner string, p *remote.Puller, ref name.Digest, a *ArtifactSource, what string, wants func(types.MediaType) bool) (map[string][]byte, time.Time, error) {
	bad := func(format string, args ...any) error {
		return &render.RenderError{Path: what, Err: fmt.Errorf(format, args...)}
	}
	desc, err := p.Get(ctx, ref)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("manifest %s: %w", ref.DigestStr(), explainRegistry(err, a))
	}
	if desc.MediaType.IsIndex() {
		return nil, time.Time{}, bad("is an image index (%s), not an artifact", desc.MediaType)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, time.Time{}, bad("manifest: %w", err)
	}
	var layer *v1.Descriptor
	for i := range m.Layers {
		if wants(m.Layers[i].MediaType) {
			layer = &m.Layers[i]
			break
		}
	}
	if layer == nil {
		var have []string
		for _, l := range m.Layers {
			have = append(have, string(l.MediaType))
		}
		return nil, time.Time{}, bad("has no tar+gzip layer (layers: %s)", strings.Join(have, ", "))
	}
	created, _ := time.Parse(time.RFC3339, m.Annotations["org.opencontainers.image.created"])
	data := f.blobs.get(owner, layer.Digest.Hex)
	if data == nil {
		max := f.opts.MaxFetchBytes
		tooLarge := func() error {
			return &render.RenderError{Path: what, Err: FetchSizeError("layer "+layer.Digest.String(), max)}
		}
		if layer.Size > max {
			return nil, time.Time{}, tooLarge()
		}
		l, err := p.Layer(ctx, ref.Context().Digest(layer.Digest.String()))
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("layer %s: %w", layer.Digest, explainRegistry(err, a))
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("layer %s: %w", layer.Digest, explainRegistry(err, a))
		}
		data, err = readAllLimit(rc, max)
		rc.Close()
		if errors.Is(err, errTooLarge) {
			return nil, time.Time{}, tooLarge()
		}
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("layer %s: %w", layer.Digest, explainRegistry(err, a))
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != layer.Digest.Hex {
			return nil, time.Time{}, fmt.Errorf("layer %s: downloaded content has digest sha256:%x", layer.Digest, sum)
		}
		if _, err := f.blobs.put(owner, data); err != nil {
			f.log.Error(err, "keep layer", "digest", layer.Digest.String())
		}
	}
	files, err := untarWithin(bytes.NewReader(data), f.opts.MaxUnpackedBytes, f.opts.MaxFiles)
	if err != nil {
		return nil, time.Time{}, bad("layer %s: %w", layer.Digest, err)
	}
	return files, created, nil
}
