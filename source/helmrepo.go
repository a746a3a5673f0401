package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// maxIndexSize bounds the index.yaml of a chart repository.
const maxIndexSize = 64 << 20

// helmState is what the Fetcher keeps of a chart repository.
type helmState struct {
	// An HTTP repository: the validators and digest of the last index.yaml,
	// and the versions of the chart it lists.
	etag, lastModified, indexDigest string
	versions                        []chartVersion
	// computed digests of archives whose entry names none, by URL
	computed map[string]string

	// An OCI repository.
	client *registryClient
}

// chartVersion is one entry of a chart in index.yaml.
type chartVersion struct {
	Version string    `json:"version"`
	URLs    []string  `json:"urls"`
	Digest  string    `json:"digest"`
	Created time.Time `json:"created"`
}

// ChartRevision is the revision of a chart: CHART@VERSION@sha256:DIGEST,
// the digest of the archive (HTTP) or of the manifest (OCI).
func ChartRevision(chart, version, digest string) string {
	return chart + "@" + version + "@" + digest
}

// parseChartRevision reads a ChartRevision.
func parseChartRevision(rev string) (chart, version, digest string, ok bool) {
	chart, rest, ok1 := strings.Cut(rev, "@")
	version, digest, ok2 := strings.Cut(rest, "@")
	if !ok1 || !ok2 || !strings.HasPrefix(digest, "sha256:") {
		return "", "", "", false
	}
	return chart, version, digest, true
}

func (f *Fetcher) resolveHelm(ctx context.Context, st *state, req Request) (target, error) {
	a := req.Artifact
	if a.Chart == "" {
		return target{}, fmt.Errorf("%s.chart is empty", a.Field)
	}
	if st.helm == nil {
		st.helm = &helmState{computed: map[string]string{}}
	}
	var pin struct{ version, digest string }
	if req.Ref != "" {
		chart, version, digest, ok := parseChartRevision(req.Ref)
		if !ok || chart != a.Chart {
			return target{}, fmt.Errorf("revision %q is not a revision of chart %s (CHART@VERSION@sha256:DIGEST)", req.Ref, a.Chart)
		}
		pin.version, pin.digest = version, digest
	}
	if strings.HasPrefix(req.URL, "oci://") {
		return f.resolveHelmOCI(ctx, st, req, pin.version, pin.digest)
	}

	versions, err := f.helmIndex(ctx, st.helm, req)
	if err != nil {
		return target{}, err
	}
	entry, err := chooseVersion(versions, pin.version, req)
	if err != nil {
		return target{}, err
	}
	if len(entry.URLs) == 0 {
		return target{}, fmt.Errorf("chart %s version %s has no URL in %s", a.Chart, entry.Version, indexURL(req.URL))
	}
	chartURL, err := resolveURL(indexURL(req.URL), entry.URLs[0])
	if err != nil {
		return target{}, fmt.Errorf("chart %s version %s: %w", a.Chart, entry.Version, err)
	}
	digest := strings.ToLower(strings.TrimPrefix(entry.Digest, "sha256:"))
	if digest != "" && !isSHA256Hex(digest) {
		return target{}, fmt.Errorf("chart %s version %s in %s: digest %q is not a sha256 digest (64 hexadecimal digits)", a.Chart, entry.Version, redact.URL(indexURL(req.URL)), entry.Digest[:min(len(entry.Digest), 80)])
	}
	if digest == "" {
		digest = st.helm.computed[chartURL]
	}
	var data []byte
	if digest == "" {
		// The index names no digest: the revision is the archive's own.
		if data, err = f.download(ctx, chartURL, req, ""); err != nil {
			return target{}, err
		}
		sum := sha256.Sum256(data)
		digest = hex.EncodeToString(sum[:])
		st.helm.computed[chartURL] = digest
	}
	if pin.digest != "" && "sha256:"+digest != pin.digest {
		return target{}, fmt.Errorf("chart %s version %s changed in %s: it has digest sha256:%s now, not %s", a.Chart, entry.Version, indexURL(req.URL), digest, pin.digest)
	}
	rev := ChartRevision(a.Chart, entry.Version, "sha256:"+digest)
	return target{rev: rev, load: func(ctx context.Context) (fs.FS, string, error) {
		if data == nil {
			if data = f.blobs.get(st.key, digest); data == nil {
				if data, err = f.download(ctx, chartURL, req, digest); err != nil {
					return nil, "", err
				}
			}
		}
		return chartFSWithin(data, redact.URL(chartURL), entry.Created, f.opts.MaxUnpackedBytes, f.opts.MaxFiles)
	}}, nil
}

// chooseVersion is the pinned version of the chart (a revision asked for),
// else the highest in req's semver range.
func chooseVersion(versions []chartVersion, pinned string, req Request) (*chartVersion, error) {
	chart := req.Artifact.Chart
	if pinned != "" {
		var entry *chartVersion
		for i := range versions {
			if versions[i].Version == pinned {
				entry = &versions[i]
			}
		}
		if entry == nil {
			return nil, fmt.Errorf("chart %s version %s is no longer in %s", chart, pinned, indexURL(req.URL))
		}
		return entry, nil
	}
	names := make([]string, len(versions))
	for i, v := range versions {
		names[i] = v.Version
	}
	best, err := highestVersion(names, req.SemVer, same, "version of chart "+chart)
	if err != nil {
		return nil, err
	}
	return &versions[slices.Index(names, best)], nil
}

// chartFS unpacks a chart archive; a bad archive is a
// *render.RenderError naming what.
func chartFS(data []byte, what string, created time.Time) (fs.FS, string, error) {
	return chartFSWithin(data, what, created, maxUnpackedSize, maxFiles)
}

// chartFSWithin is chartFS within bounds of the unpacked size and the
// files.
func chartFSWithin(data []byte, what string, created time.Time, maxBytes int64, maxEntries int) (fs.FS, string, error) {
	files, err := untarWithin(bytes.NewReader(data), maxBytes, maxEntries)
	if err != nil {
		return nil, "", &render.RenderError{Path: what, Err: err}
	}
	return chartDir(files, what, created)
}

// helmIndex returns the versions of the chart in the repository's
// index.yaml, asking with the validators of the last answer so that an
// unchanged index costs one request and no parse.
func (f *Fetcher) helmIndex(ctx context.Context, hs *helmState, req Request) ([]chartVersion, error) {
	a := req.Artifact
	u := indexURL(req.URL)
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s.url: %s", a.Field, redact.Text(err.Error()))
	}
	if hs.versions != nil {
		if hs.etag != "" {
			r.Header.Set("If-None-Match", hs.etag)
		}
		if hs.lastModified != "" {
			r.Header.Set("If-Modified-Since", hs.lastModified)
		}
	}
	if err := setHTTPAuth(r, a); err != nil {
		return nil, err
	}
	resp, err := f.http.RoundTrip(r)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact.URL(u), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && hs.versions != nil:
		return hs.versions, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("GET %s: %s; %s", redact.URL(u), resp.Status, credentialsHint(a, "chart repository"))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", redact.URL(u), resp.Status)
	}
	body, err := readAllLimit(resp.Body, maxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact.URL(u), err)
	}
	sum := sha256.Sum256(body)
	digest := hex.EncodeToString(sum[:])
	if digest != hs.indexDigest || hs.versions == nil {
		var index struct {
			APIVersion string                    `json:"apiVersion"`
			Entries    map[string][]chartVersion `json:"entries"`
		}
		if err := yaml.Unmarshal(body, &index); err != nil {
			return nil, fmt.Errorf("%s: %w", redact.URL(u), err)
		}
		versions, ok := index.Entries[a.Chart]
		if !ok {
			charts := make([]string, 0, len(index.Entries))
			for c := range index.Entries {
				charts = append(charts, c)
			}
			sort.Strings(charts)
			if len(charts) > 10 {
				charts = append(charts[:10], "…")
			}
			return nil, fmt.Errorf("chart %s is not in %s (it has %s)", a.Chart, redact.URL(u), strings.Join(charts, ", "))
		}
		if versions == nil {
			versions = []chartVersion{}
		}
		hs.versions, hs.indexDigest = versions, digest
	}
	hs.etag, hs.lastModified = resp.Header.Get("ETag"), strongLastModified(resp.Header)
	return hs.versions, nil
}

// strongLastModified returns the Last-Modified of a response unless the
// file changed within two seconds of the answer: its one-second resolution
// would then hide a second change in the same second from If-Modified-Since
// (RFC 9110, 8.8.2.2).
func strongLastModified(h http.Header) string {
	lm, err := http.ParseTime(h.Get("Last-Modified"))
	if err != nil {
		return ""
	}
	date, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		date = time.Now()
	}
	if date.Sub(lm) < 2*time.Second {
		return ""
	}
	return h.Get("Last-Modified")
}

// download gets a chart archive; with digest (hex) set, it must have it.
// Credentials go only to the repository's own host.
func (f *Fetcher) download(ctx context.Context, chartURL string, req Request, digest string) ([]byte, error) {
	a := req.Artifact
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, chartURL, nil)
	if err != nil {
		return nil, fmt.Errorf("chart URL: %s", redact.Text(err.Error()))
	}
	if sameHost(chartURL, req.URL) {
		if err := setHTTPAuth(r, a); err != nil {
			return nil, err
		}
	}
	resp, err := f.http.RoundTrip(r)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact.URL(chartURL), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("GET %s: %s; %s", redact.URL(chartURL), resp.Status, credentialsHint(a, "chart repository"))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("GET %s: %s", redact.URL(chartURL), resp.Status)
	}
	data, err := readAllLimit(resp.Body, f.opts.MaxFetchBytes)
	if errors.Is(err, errTooLarge) {
		return nil, &render.RenderError{Path: redact.URL(chartURL), Err: FetchSizeError("the chart archive", f.opts.MaxFetchBytes)}
	}
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact.URL(chartURL), err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); digest != "" && got != digest {
		return nil, fmt.Errorf("GET %s: the archive has digest sha256:%s, index.yaml says sha256:%s", redact.URL(chartURL), got, digest)
	}
	if _, err := f.blobs.put(req.CacheKey(), data); err != nil {
		f.log.Error(err, "keep chart archive", "url", redact.URL(chartURL))
	}
	return data, nil
}

// resolveHelmOCI resolves a chart in an OCI registry: the tag of an exact
// version (one manifest HEAD), or the highest tag in a range (a tag list,
// then the HEAD); Helm writes "+" of a version as "_" in a tag.
func (f *Fetcher) resolveHelmOCI(ctx context.Context, st *state, req Request, pinVersion, pinDigest string) (target, error) {
	a, hs := req.Artifact, st.helm
	repo, err := name.NewRepository(strings.TrimPrefix(strings.TrimSuffix(req.URL, "/"), "oci://")+"/"+a.Chart, nameOptions(a)...)
	if err != nil {
		return target{}, fmt.Errorf("%s.url: %w", a.Field, err)
	}
	p, err := f.puller(&hs.client, repo.RegistryStr(), a)
	if err != nil {
		return target{}, err
	}
	toVersion := func(tag string) string { return strings.ReplaceAll(tag, "_", "+") }
	version, digest := pinVersion, pinDigest
	switch {
	case version != "":
	case isExactVersion(req.SemVer):
		version = req.SemVer
	default:
		tags, err := p.List(ctx, repo)
		if err != nil {
			return target{}, fmt.Errorf("list tags: %w", explainRegistry(err, a))
		}
		tag, err := highestVersion(tags, req.SemVer, toVersion, "tag of chart "+a.Chart)
		if err != nil {
			return target{}, err
		}
		version = toVersion(tag)
	}
	if digest == "" {
		if digest, err = headDigest(ctx, p, repo.Tag(strings.ReplaceAll(version, "+", "_")), a); err != nil {
			return target{}, err
		}
	}
	rev := ChartRevision(a.Chart, version, digest)
	what := "oci://" + repo.String() + ":" + strings.ReplaceAll(version, "+", "_") + "@" + digest
	return target{rev: rev, load: func(ctx context.Context) (fs.FS, string, error) {
		files, created, err := f.pullArtifact(ctx, st.key, p, repo.Digest(digest), a, what, func(mt types.MediaType) bool { return mt == HelmChartMediaType })
		if err != nil {
			return nil, "", err
		}
		return chartDir(files, what, created)
	}}, nil
}

// chartDir finds the chart in unpacked files: the folder to render is the
// one that holds Chart.yaml (the chart's name, in a packaged chart).
func chartDir(files map[string][]byte, what string, created time.Time) (fs.FS, string, error) {
	var dirs []string
	for p := range files {
		if path.Base(p) == "Chart.yaml" && strings.Count(p, "/") <= 1 {
			dirs = append(dirs, path.Dir(p))
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		return nil, "", &render.RenderError{Path: what, Err: fmt.Errorf("the archive holds no Chart.yaml")}
	}
	return newMemFS(files, created), dirs[0], nil
}

// isSHA256Hex reports whether s is a sha256 digest in lowercase hex.
func isSHA256Hex(s string) bool {
	_, err := hex.DecodeString(s)
	return len(s) == 64 && err == nil && strings.ToLower(s) == s
}

func indexURL(repo string) string { return strings.TrimSuffix(repo, "/") + "/index.yaml" }

// resolveURL resolves a chart URL of index.yaml, which may be relative to it.
func resolveURL(index, ref string) (string, error) {
	base, err := url.Parse(index)
	if err != nil {
		return "", err
	}
	u, err := base.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("chart URL %q: %w", ref, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("chart URL %q is not http(s)", ref)
	}
	return u.String(), nil
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && ua.Host == ub.Host
}

// setHTTPAuth sets the basic or bearer auth of a's credentials on r. It
// refuses credentials, of a or of r's URL, that would go in clear text to
// an http:// URL, unless a says insecure.
func setHTTPAuth(r *http.Request, a *ArtifactSource) error {
	c := a.Credentials
	if err := c.CheckURL(r.URL.String(), a.Insecure, a.Field); err != nil {
		if c != nil && c.Secret != "" {
			return fmt.Errorf("%s: %w", c.Secret, err)
		}
		return err
	}
	switch {
	case c == nil:
	case c.BearerToken != "":
		r.Header.Set("Authorization", "Bearer "+c.BearerToken)
	case c.Username != "":
		r.SetBasicAuth(c.Username, c.Password)
	}
	return nil
}
