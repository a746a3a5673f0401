package source

import "strings"

// SourceKind is the kind of source a Request fetches.
//
// How the kinds other than Git read a Request:
//   - SourceHelmRepository: URL is the chart repository (http(s):// with an
//     index.yaml, or oci://), Artifact.Chart the chart, SemVer its version
//     or version range; the revision is CHART@VERSION@sha256:DIGEST.
//   - SourceOCI: URL is oci://REGISTRY/REPOSITORY, Ref a tag or a digest
//     (sha256:...), SemVer a range of tags, Path the folder in the
//     artifact; the revision is TAG@sha256:DIGEST, or sha256:DIGEST when a
//     digest was asked for.
//   - SourceBucket: URL names the prefix (http(s)://ENDPOINT/BUCKET/PREFIX,
//     for messages), Artifact has endpoint, bucket, prefix and region; the
//     revision is sha256: of the object list and ETags.
//
// For every kind, Ref may also be a revision the fetcher returned before:
// that revision is fetched again (a bucket can only give back the one it
// holds now, or the last one fetched).
type SourceKind string

// Source kinds.
const (
	SourceGit            SourceKind = "git"
	SourceHelmRepository SourceKind = "helmRepository"
	SourceOCI            SourceKind = "oci"
	SourceBucket         SourceKind = "bucket"
)

// ArtifactSource is what the kinds other than Git need besides the URL.
type ArtifactSource struct {
	// Chart is the chart's name (helmRepository).
	Chart string
	// Endpoint (host[:port]), Bucket, Prefix and Region of a bucket.
	Endpoint, Bucket, Prefix, Region string
	// Insecure allows plain HTTP.
	Insecure bool
	// Credentials for the registry, chart repository or bucket; nil is
	// anonymous.
	Credentials *Credentials
	// Field is the spec field of the source ("spec.oci"), for messages.
	Field string
}

// Credentials for a registry, chart repository or bucket, read from a Secret.
type Credentials struct {
	// Username and Password (basic auth), or BearerToken.
	Username, Password, BearerToken string
	// DockerConfig is a .dockerconfigjson (OCI registries).
	DockerConfig []byte
	// AccessKey, SecretKey and SessionToken of a bucket.
	AccessKey, SecretKey, SessionToken string
	// Secret says where they come from ("Secret ns/name (spec.oci.secretRef)"),
	// for messages; never a value.
	Secret string
}

// ShortRevision shortens a revision for messages: a commit SHA to 7
// characters, the digest of an artifact revision ("sha256:…",
// "v1@sha256:…", "chart@1.2.3@sha256:…") to 7 hex characters after
// "sha256:". Anything else ("chart@1.2.3") is kept whole.
func ShortRevision(rev string) string {
	if i := strings.Index(rev, "sha256:"); i >= 0 {
		return rev[:min(len(rev), i+len("sha256:")+7)]
	}
	if len(rev) > 7 && strings.Trim(rev, "0123456789abcdef") == "" {
		return rev[:7]
	}
	return rev
}
