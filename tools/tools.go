//go:build tools

// Package tools pins the control-plane binaries and CLIs that driftguard's
// tests and demo run. It is never imported by the product; build.sh
// compiles the main packages listed here into a cache keyed by version.
package tools

import (
	_ "github.com/getsops/sops/v3/cmd/sops"
	_ "github.com/minio/minio"
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v4/cmd/helm"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
