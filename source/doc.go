// Package source fetches the sources of a Guard: Git repositories
// (GitFetcher: a bare cache per repository, credentials, known hosts,
// semver ranges of tags), charts from Helm chart repositories (an HTTP
// index.yaml or an OCI registry), OCI artifacts (a tar+gzip layer of
// manifests, as driftguard push artifact and flux push artifact make them)
// and prefixes of S3-compatible buckets. Each kind asks the remote for the
// revision cheaply (ls-remote, an index.yaml with ETag, a manifest HEAD,
// one bucket listing), downloads and renders only when the revision or the
// render options changed, keeps archives by digest, and renders with
// package render, so render, apply, drift, admission and audit work the
// same for every kind. Fetcher dispatches a Request to the kind it names,
// Git included.
package source
