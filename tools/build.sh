#!/usr/bin/env bash
# Builds the binaries driftguard's tests and demo need into a cache outside the
# work tree, keyed by version, and prints the folder. A second run takes seconds.
#   tools/build.sh            build everything (kube-apiserver, etcd, kcm, scheduler,
#                             kubectl, kwok, helm, minio, controller-gen, golangci-lint)
#   tools/build.sh test       only what the tests and the demo run (no controller-gen,
#                             no golangci-lint: make test on a cold machine skips ~15 minutes)
#   tools/build.sh --print    print the folder only
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
KWOK_VERSION=v0.8.0
HELM_VERSION=v4.3.1
CONTROLLER_GEN_VERSION=v0.20.1
GOLANGCI_VERSION=v2.15.0
# MinIO's server (S3-compatible buckets in tests) has no semver tags: a pseudo-version.
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

cache=${DRIFTGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driftguard/tools}
bin="$cache/$KUBE_VERSION"
if [[ "${1:-}" == "--print" ]]; then echo "$bin"; exit 0; fi
mkdir -p "$bin"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"

# build NAME PKG STAMP: builds once; a stamp file records which version it is.
build_kube() {
  local name=$1 pkg=$2 stamp=$3
  if [[ -x "$bin/$name" && "$(cat "$bin/.$name.version" 2>/dev/null)" == "$stamp" ]]; then return; fi
  echo "tools: building $name $stamp" >&2
  (cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$bin/$name.tmp" "$pkg")
  mv "$bin/$name.tmp" "$bin/$name"
  echo "$stamp" > "$bin/.$name.version"
}
install_mod() {
  local name=$1 pkg=$2 version=$3
  if [[ -x "$bin/$name" && "$(cat "$bin/.$name.version" 2>/dev/null)" == "$version" ]]; then return; fi
  echo "tools: building $name $version" >&2
  local tmp; tmp=$(mktemp -d)
  GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "$pkg@$version"
  mv "$tmp/$(basename "${pkg%%/v[0-9]*}")" "$bin/$name" 2>/dev/null || mv "$tmp"/* "$bin/$name"
  rmdir "$tmp" 2>/dev/null || rm -rf "$tmp"
  echo "$version" > "$bin/.$name.version"
}

build_kube etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
build_kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$KUBE_VERSION"
build_kube kubectl k8s.io/kubernetes/cmd/kubectl "$KUBE_VERSION"
build_kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$KUBE_VERSION"
build_kube kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$KUBE_VERSION"
install_mod kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION"
install_mod helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION"
install_mod minio github.com/minio/minio "$MINIO_VERSION"
if [[ "${1:-}" != "test" ]]; then
  install_mod controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$CONTROLLER_GEN_VERSION"
  install_mod golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint "$GOLANGCI_VERSION"
fi

# KWOK's stock fast stages, rendered once (it refuses to start without stages).
if [[ ! -s "$bin/kwok-stages.yaml" || "$(cat "$bin/.kwok-stages.version" 2>/dev/null)" != "$KWOK_VERSION" ]]; then
  moddir=$(cd "$here" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  "$bin/kubectl" kustomize "$moddir/kustomize/stage/fast" > "$bin/kwok-stages.yaml"
  echo "$KWOK_VERSION" > "$bin/.kwok-stages.version"
fi
echo "$bin"
