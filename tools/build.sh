#!/usr/bin/env bash
# Builds the binaries driftguard's tests and demo need into a cache outside the
# work tree, keyed by version, and prints the folder. A second run takes seconds.
#   tools/build.sh            build everything (kube-apiserver, etcd, kcm, scheduler,
#                             kubectl, kwok, helm, minio, sops, controller-gen, golangci-lint)
#   tools/build.sh test       only what the tests and the demo run (no controller-gen,
#                             no golangci-lint: make test on a cold machine skips ~15 minutes)
#   tools/build.sh --print    print the folder only
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
# KWOK, Helm, MinIO and sops are built from this module too (tools.go):
# their versions are the ones go.mod requires.
KWOK_VERSION=$(awk '$1 == "sigs.k8s.io/kwok" {print $2}' "$here/go.mod")
HELM_VERSION=$(awk '$1 == "helm.sh/helm/v4" {print $2}' "$here/go.mod")
CONTROLLER_GEN_VERSION=v0.20.1
GOLANGCI_VERSION=v2.15.0
# MinIO's server (S3-compatible buckets in tests) has no semver tags: a
# pseudo-version.
MINIO_VERSION=$(awk '$1 == "github.com/minio/minio" {print $2}' "$here/go.mod")
# The sops CLI encrypts the tests' SOPS files (render/sopstest): the tests
# run it rather than link the sops library, whose KMS clients the guard
# does not link.
SOPS_VERSION=$(awk '$1 == "github.com/getsops/sops/v3" {print $2}' "$here/go.mod")

cache=${DRIFTGUARD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driftguard/tools}
bin="$cache/$KUBE_VERSION"
if [[ "${1:-}" == "--print" ]]; then echo "$bin"; exit 0; fi
mkdir -p "$bin"

export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"

# want NAME PKG STAMP: NAME is to be built from PKG (the tools module's
# Kubernetes, etcd, KWOK, Helm, MinIO and sops) unless the cache holds it at STAMP (a
# stamp file records which version it is). They are built by one go build
# below: the packages they share compile once, and one links while others
# compile. go.mod requires the main module's versions of the modules both
# use, so that `go build ./cmd/driftguard` (same flags: CGO_ENABLED=0,
# -trimpath) finds two thirds of its packages compiled here already.
names=() pkgs=() stamps=()
want() {
  if [[ -x "$bin/$1" && "$(cat "$bin/.$1.version" 2>/dev/null)" == "$3" ]]; then return; fi
  names+=("$1") pkgs+=("$2") stamps+=("$3")
}
# install_mod NAME PKG VERSION: go install of a module of its own (run in
# the background beside the build above: its downloads overlap compiling).
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

want etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
want kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$KUBE_VERSION"
want kubectl k8s.io/kubernetes/cmd/kubectl "$KUBE_VERSION"
want kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$KUBE_VERSION"
want kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$KUBE_VERSION"
want kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION"
want helm helm.sh/helm/v4/cmd/helm "$HELM_VERSION"
want minio github.com/minio/minio "$MINIO_VERSION"
want sops github.com/getsops/sops/v3/cmd/sops "$SOPS_VERSION"

# The linters and controller-gen, for make lint and make generate only, are
# go installs of modules of their own, in the background.
mods=()
if [[ "${1:-}" != "test" ]]; then
  mods+=(
    "controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen $CONTROLLER_GEN_VERSION"
    "golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint $GOLANGCI_VERSION"
  )
fi
pids=()
for m in "${mods[@]}"; do
  # shellcheck disable=SC2086 # three words: name, package, version
  install_mod $m &
  pids+=($!)
done

failed=0
if ((${#names[@]})); then
  echo "tools: building ${names[*]}" >&2
  out=$(mktemp -d "$bin/.build.XXXXXX")
  if (cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$out/" "${pkgs[@]}"); then
    for i in "${!names[@]}"; do
      # go build names a binary after its package path, less a /vN suffix.
      exe=$(basename "$(sed -E 's|/v[0-9]+$||' <<<"${pkgs[$i]}")")
      mv "$out/$exe" "$bin/${names[$i]}"
      echo "${stamps[$i]}" > "$bin/.${names[$i]}.version"
    done
  else
    failed=1
  fi
  rm -rf "$out"
fi
for pid in "${pids[@]}"; do
  wait "$pid" || failed=1
done
if ((failed)); then
  echo "tools: a build failed (above)" >&2
  exit 1
fi

# KWOK's stock fast stages, rendered once (it refuses to start without stages).
if [[ ! -s "$bin/kwok-stages.yaml" || "$(cat "$bin/.kwok-stages.version" 2>/dev/null)" != "$KWOK_VERSION" ]]; then
  moddir=$(cd "$here" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
  "$bin/kubectl" kustomize "$moddir/kustomize/stage/fast" > "$bin/kwok-stages.yaml"
  echo "$KWOK_VERSION" > "$bin/.kwok-stages.version"
fi
echo "$bin"
