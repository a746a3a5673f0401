// Copyright 2022 The Kubernetes Authors.
// SPDX-License-Identifier: Apache-2.0

package loader

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/errors"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var (
	ErrHTTP     = errors.Errorf("HTTP Error")
	ErrRtNotDir = errors.Errorf("must build at directory")
	// ErrRemote is why driftguard's copy of the loader refuses a remote
	// file (http, https) or a remote base (a Git repository): it reads
	// only the file system it is given, and has no HTTP client and no git.
	ErrRemote = errors.Errorf("remote files and bases are not fetched")
)

// remoteError is ErrRemote for ref, named in the kustomization in folder
// root. The text is parsed by driftguard (gitstore/render_kustomize.go):
// keep its shape.
func remoteError(ref string, root filesys.ConfirmedDir) error {
	return fmt.Errorf("%q is remote (kustomization folder %q): %w", ref, root.String(), ErrRemote)
}
