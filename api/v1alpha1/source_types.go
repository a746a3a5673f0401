package v1alpha1

// GitSource is a Git repository, a revision in it and a path.
// +kubebuilder:validation:XValidation:rule="!(has(self.ref) && has(self.semver))",message="spec.git.ref and spec.git.semver exclude each other"
type GitSource struct {
	// URL of the Git repository (http, https, ssh or file).
	// +kubebuilder:validation:MinLength=1
	URL string `json:"url"`
	// Ref is a branch, a tag, a full reference (refs/...) or a full commit
	// SHA. Defaults to the remote HEAD. It excludes semver.
	// +optional
	Ref string `json:"ref,omitempty"`
	// SemVer selects the highest tag that is a semantic version in this
	// range (">=1.2.0 <2", "^1.4", "~2.0"). It excludes ref.
	// +optional
	SemVer string `json:"semver,omitempty"`
	// Path inside the repository whose manifests are applied. Defaults to the root.
	// +optional
	Path string `json:"path,omitempty"`
	// SecretRef names a Secret with Git credentials: username and password,
	// or bearerToken (HTTPS); identity, known_hosts and optionally password
	// as the key's passphrase (SSH).
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// HelmRepositorySource is a chart in a Helm chart repository.
type HelmRepositorySource struct {
	// URL of the repository: http(s)://... serving index.yaml, or
	// oci://registry/path holding the chart as registry/path/CHART:VERSION.
	// +kubebuilder:validation:Pattern=`^(https?|oci)://`
	URL string `json:"url"`
	// Chart is the name of the chart.
	// +kubebuilder:validation:MinLength=1
	Chart string `json:"chart"`
	// Version is an exact chart version or a semver range (">=1.2.0 <2",
	// "^1.4"); the highest matching version is rendered. Defaults to the
	// highest stable version.
	// +optional
	Version string `json:"version,omitempty"`
	// SecretRef names a Secret with the keys username and password (basic
	// auth) or bearerToken; for oci:// also .dockerconfigjson.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
	// Insecure allows plain HTTP to an oci:// registry, and sends the
	// credentials of secretRef to an http:// repository (refused otherwise).
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// OCISource is an OCI artifact whose first tar+gzip layer holds manifests.
// +kubebuilder:validation:XValidation:rule="(has(self.tag) ? 1 : 0) + (has(self.semver) ? 1 : 0) + (has(self.digest) ? 1 : 0) <= 1",message="spec.oci.tag, spec.oci.semver and spec.oci.digest exclude each other"
type OCISource struct {
	// URL of the artifact's repository: oci://registry/repository, without
	// tag or digest.
	// +kubebuilder:validation:Pattern=`^oci://[^:@]+(:[0-9]+)?/[^:@]+$`
	URL string `json:"url"`
	// Tag to pull; defaults to latest.
	// +optional
	Tag string `json:"tag,omitempty"`
	// SemVer selects the highest tag that is a semantic version in this range.
	// +optional
	SemVer string `json:"semver,omitempty"`
	// Digest pins one manifest (sha256:...).
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
	// Path inside the artifact whose manifests are applied. Defaults to the root.
	// +optional
	Path string `json:"path,omitempty"`
	// SecretRef names a Secret with the keys username and password (basic
	// auth), bearerToken, or .dockerconfigjson.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
	// Insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// BucketSource is a prefix of an S3-compatible bucket.
type BucketSource struct {
	// Endpoint is the host[:port] of the S3 API (s3.amazonaws.com,
	// minio.example:9000).
	// +kubebuilder:validation:MinLength=1
	Endpoint string `json:"endpoint"`
	// Bucket name.
	// +kubebuilder:validation:MinLength=1
	Bucket string `json:"bucket"`
	// Prefix of the objects whose manifests are applied (a folder,
	// "apps/web/"); defaults to the whole bucket.
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region of the bucket; asked of the endpoint when empty.
	// +optional
	Region string `json:"region,omitempty"`
	// SecretRef names a Secret with the keys accessKey and secretKey, and
	// optionally sessionToken; anonymous access without it.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
	// Insecure uses plain HTTP instead of HTTPS.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}
