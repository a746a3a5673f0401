// Copyright 2019 The Kubernetes Authors.
// SPDX-License-Identifier: Apache-2.0

package git

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Cloner is a function that can clone a git repo.
type Cloner func(repoSpec *RepoSpec) error

// ClonerUsingGitExec used a local git install to clone a remote repo.
//
// driftguard: it clones nothing and runs no program; it returns an error.
// (Its git runner, gitrunner.go, is removed.)
func ClonerUsingGitExec(repoSpec *RepoSpec) error {
	return fmt.Errorf("%q is a remote repository: remote bases are not cloned", repoSpec.Raw())
}

// DoNothingCloner returns a cloner that only sets
// cloneDir field in the repoSpec.  It's assumed that
// the cloneDir is associated with some fake filesystem
// used in a test.
func DoNothingCloner(dir filesys.ConfirmedDir) Cloner {
	return func(rs *RepoSpec) error {
		rs.Dir = dir
		return nil
	}
}
