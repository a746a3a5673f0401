// Package sources fetches the sources of a Guard that are not Git: charts
// from Helm chart repositories (an HTTP index.yaml or an OCI registry), OCI
// artifacts (a tar+gzip layer of manifests, as driftguard push artifact and
// flux push artifact make them) and prefixes of S3-compatible buckets. Each
// kind asks the remote for the revision cheaply (an index.yaml with ETag, a
// manifest HEAD, one bucket listing), downloads and renders only when the
// revision or the render options changed, keeps archives by digest, and
// renders with gitstore.RenderWith, so render, apply, drift, admission and
// audit work the same for every kind. Fetcher dispatches a gitstore.Request
// to the kind it names, Git included.
package sources
