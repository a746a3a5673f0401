package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/source"
)

// InvalidSourceError is a Guard that names no source or more than one, or
// mixes the fields of two: it cannot work until its spec changes.
type InvalidSourceError struct{ Msg string }

func (e *InvalidSourceError) Error() string { return e.Msg }

// RenderSettingsError is a render setting of a Guard that cannot be read: a
// ConfigMap or Secret of spec.varsFrom, the Secret of spec.decryption.
type RenderSettingsError struct{ Err error }

func (e *RenderSettingsError) Error() string { return e.Err.Error() }
func (e *RenderSettingsError) Unwrap() error { return e.Err }

// Request builds what the fetcher needs from a Guard's spec: which kind of
// source, where, which revision, which path, the credentials of its
// secretRef, and how to render (see RenderOptions). A spec that does not
// name exactly one source is an *InvalidSourceError. It is RequestIn
// without a cluster (see RenderOptions).
func Request(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string) (source.Request, error) {
	return RequestIn(ctx, c, g, defaultNamespace, RenderCluster{})
}

// RequestIn is Request with what rc reads from the cluster for the render
// (see RenderOptionsIn).
func RequestIn(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string, rc RenderCluster) (source.Request, error) {
	req, ref, err := sourceRequest(&g.Spec)
	if err != nil {
		return req, err
	}
	if req.Kind == source.SourceGit {
		if req.Auth, err = Auth(ctx, c, g, defaultNamespace); err != nil {
			if errors.Is(err, source.ErrPlainHTTPCredentials) {
				return req, fmt.Errorf("guard %s: %w", g.Name, err)
			}
			return req, err
		}
	} else if ref != nil {
		field := req.Artifact.Field + ".secretRef"
		data, err := secretData(ctx, c, *ref, defaultNamespace)
		if err != nil {
			return req, fmt.Errorf("%s: %w", field, err)
		}
		from := "Secret " + secretName(*ref, defaultNamespace) + " (" + field + ")"
		if req.Artifact.Credentials, err = Credentials(req.Kind, data, from); err != nil {
			return req, fmt.Errorf("%s %s: %w", field, secretName(*ref, defaultNamespace), err)
		}
		if req.Kind == source.SourceHelmRepository {
			if err := req.Artifact.Credentials.CheckURL(req.URL, req.Artifact.Insecure, req.Artifact.Field); err != nil {
				return req, fmt.Errorf("guard %s: %s %s: %w", g.Name, field, secretName(*ref, defaultNamespace), err)
			}
		}
	}
	if req.Render, err = RenderOptionsIn(ctx, c, g, defaultNamespace, rc); err != nil {
		return req, &RenderSettingsError{Err: err}
	}
	req.Render.Credentials = credentialValues(req)
	return req, nil
}

// credentialValues are the secret parts of a request's credentials, which
// the render marks sensitive so that they never leave in clear (user names
// and access key IDs are not secret).
func credentialValues(req source.Request) []string {
	var out []string
	if a := req.Auth; a != nil {
		out = append(out, a.Password, a.BearerToken, string(a.SSHKey), a.SSHKeyPassphrase)
	}
	if req.Artifact != nil && req.Artifact.Credentials != nil {
		c := req.Artifact.Credentials
		out = append(out, c.Password, c.BearerToken, string(c.DockerConfig), c.SecretKey, c.SessionToken)
	}
	return slices.DeleteFunc(out, func(s string) bool { return s == "" })
}

// SourceURL is the URL of a Guard's source, as its objects and audit
// records carry it: the Git URL of spec.git, the repository of
// spec.helmRepository or spec.oci, http(s)://ENDPOINT/BUCKET/PREFIX of
// spec.bucket; "" when the spec names no single source.
func SourceURL(g *v1alpha1.Guard) string {
	req, _, err := sourceRequest(&g.Spec)
	if err != nil {
		return ""
	}
	return req.URL
}

// sourceRequest reads the one source a spec names, and the Secret of its
// credentials (Git's is read by Auth).
func sourceRequest(s *v1alpha1.GuardSpec) (source.Request, *v1alpha1.SecretReference, error) {
	var named []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"spec.git", s.Git != nil}, {"spec.helmRepository", s.HelmRepository != nil}, {"spec.oci", s.OCI != nil}, {"spec.bucket", s.Bucket != nil}} {
		if f.set {
			named = append(named, f.name)
		}
	}
	switch {
	case len(named) == 0:
		return source.Request{}, nil, &InvalidSourceError{"the Guard names no source: set one of spec.git, spec.helmRepository, spec.oci or spec.bucket"}
	case len(named) > 1:
		return source.Request{}, nil, &InvalidSourceError{fmt.Sprintf("the Guard names %d sources (%s): keep exactly one", len(named), strings.Join(named, ", "))}
	}
	switch {
	case s.HelmRepository != nil:
		h := s.HelmRepository
		return source.Request{Kind: source.SourceHelmRepository, URL: h.URL, SemVer: h.Version,
			Artifact: &source.ArtifactSource{Chart: h.Chart, Insecure: h.Insecure, Field: "spec.helmRepository"}}, h.SecretRef, nil
	case s.OCI != nil:
		o := s.OCI
		if n := count(o.Tag != "", o.SemVer != "", o.Digest != ""); n > 1 {
			return source.Request{}, nil, &InvalidSourceError{"spec.oci.tag, spec.oci.semver and spec.oci.digest exclude each other"}
		}
		ref := o.Tag
		if o.Digest != "" {
			ref = o.Digest
		}
		return source.Request{Kind: source.SourceOCI, URL: o.URL, Ref: ref, SemVer: o.SemVer, Path: o.Path,
			Artifact: &source.ArtifactSource{Insecure: o.Insecure, Field: "spec.oci"}}, o.SecretRef, nil
	case s.Bucket != nil:
		b := s.Bucket
		scheme := "https"
		if b.Insecure {
			scheme = "http"
		}
		u := scheme + "://" + b.Endpoint + "/" + b.Bucket
		if p := strings.Trim(b.Prefix, "/"); p != "" {
			u += "/" + p
		}
		return source.Request{Kind: source.SourceBucket, URL: u,
			Artifact: &source.ArtifactSource{Endpoint: b.Endpoint, Bucket: b.Bucket, Prefix: b.Prefix, Region: b.Region, Insecure: b.Insecure, Field: "spec.bucket"}}, b.SecretRef, nil
	}
	git := s.Git
	return source.Request{Kind: source.SourceGit, URL: git.URL, Ref: git.Ref, SemVer: git.SemVer, Path: git.Path, Field: "spec.git.url"}, nil, nil
}

// PinRevision returns req changed to fetch exactly revision rev, as an
// earlier fetch of req reported it: a commit SHA (Git), the digest of
// "tag@sha256:…" (OCI), the version of "chart@1.2.3@sha256:…" (Helm). A
// bucket keeps no history: ok is false.
func PinRevision(req source.Request, rev string) (source.Request, bool) {
	switch req.Kind {
	case source.SourceGit, "":
		req.Ref, req.SemVer = rev, ""
		return req, true
	case source.SourceOCI:
		i := strings.Index(rev, "sha256:")
		if i < 0 {
			return req, false
		}
		req.Ref, req.SemVer = rev[i:], ""
		return req, true
	case source.SourceHelmRepository:
		parts := strings.Split(rev, "@")
		if len(parts) < 2 || parts[1] == "" {
			return req, false
		}
		req.SemVer = parts[1]
		return req, true
	}
	return req, false
}

func count(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}

// The keys of a Secret with the credentials of a bucket.
const (
	SecretAccessKey    = "accessKey"
	SecretSecretKey    = "secretKey"
	SecretSessionToken = "sessionToken"
)

// Credentials turns the data of a Secret into the credentials of a source
// of kind: username and password, bearerToken, or .dockerconfigjson for an
// OCI registry or chart repository; accessKey, secretKey and optionally
// sessionToken for a bucket. from names the Secret in messages. Errors name
// the keys at fault, never a value.
func Credentials(kind source.SourceKind, data map[string][]byte, from string) (*source.Credentials, error) {
	cr := &source.Credentials{Secret: from}
	if kind == source.SourceBucket {
		cr.AccessKey, cr.SecretKey, cr.SessionToken = string(data[SecretAccessKey]), string(data[SecretSecretKey]), string(data[SecretSessionToken])
		if cr.AccessKey == "" || cr.SecretKey == "" {
			return nil, fmt.Errorf("secret needs the keys %q and %q", SecretAccessKey, SecretSecretKey)
		}
		return cr, nil
	}
	cr.Username, cr.Password = string(data[source.SecretUsername]), string(data[source.SecretPassword])
	cr.BearerToken = string(data[source.SecretBearerToken])
	cr.DockerConfig = data[corev1.DockerConfigJsonKey]
	if cr.Username == "" && cr.Password == "" && cr.BearerToken == "" && len(cr.DockerConfig) == 0 {
		return nil, fmt.Errorf("secret has none of the keys %q, %q, %q or %q", source.SecretUsername, source.SecretPassword, source.SecretBearerToken, corev1.DockerConfigJsonKey)
	}
	if (cr.Username == "") != (cr.Password == "") {
		return nil, fmt.Errorf("secret keys %q and %q go together", source.SecretUsername, source.SecretPassword)
	}
	return cr, nil
}

// Auth reads the Git credentials a Guard names (spec.git.secretRef), nil
// when it names none. Errors name the Secret and
// the key at fault, never a value.
func Auth(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string) (*source.Auth, error) {
	git := g.Spec.Git
	if git == nil || git.SecretRef == nil {
		return nil, nil
	}
	const field = "spec.git.secretRef"
	data, err := secretData(ctx, c, *git.SecretRef, defaultNamespace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	auth, err := source.AuthFromSecret(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", field, secretName(*git.SecretRef, defaultNamespace), err)
	}
	// Credentials never go over plain http://, to no host.
	if err := auth.CheckURL(git.URL); err != nil {
		return nil, fmt.Errorf("%s %s: %w", field, secretName(*git.SecretRef, defaultNamespace), err)
	}
	return auth, nil
}

func secretName(ref v1alpha1.SecretReference, defaultNamespace string) string {
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	return ns + "/" + ref.Name
}

func secretData(ctx context.Context, c client.Reader, ref v1alpha1.SecretReference, defaultNamespace string) (map[string][]byte, error) {
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &s); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, ref.Name, err)
	}
	return s.Data, nil
}

// ListingReuse is how long the ref listing of a Git repository (per URL and
// credentials) resolves the refs of other Guards of the repository, rather
// than each listing it again: 1,000 Guards of one repository reconciled
// together cost a few listings, not 1,000. A push notification drops the
// listings of its repository first; a requested reconcile or sync lists
// anew.
const ListingReuse = 500 * time.Millisecond

// listingForgetter is a Fetcher that reuses ref listings
// (source.Request.ListingMaxAge) and drops them on a push.
type listingForgetter interface {
	ForgetListings(urls []string)
}

// requestPending reports whether a person asked for a reconcile or a sync
// of the Guard that has not been handled yet (driftguard reconcile, sync).
func requestPending(g *v1alpha1.Guard) bool {
	if req := g.Annotations[v1alpha1.ReconcileRequestedAnnotation]; req != "" && req != g.Status.LastHandledReconcileAt {
		return true
	}
	req := g.Annotations[v1alpha1.SyncRequestedAnnotation]
	return req != "" && req != g.Status.LastHandledSyncRequest
}
