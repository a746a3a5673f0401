package main

import (
	"context"
	"fmt"
	"io"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/gitwrite"
	"github.com/driftguard/driftguard/redact"
)

// pushTo is where adopt and rollback push for g: the branch and its
// credentials (remote), the commit's author, and the Kubernetes user who
// runs the command.
func (o *writeOptions) pushTo(ctx context.Context, k *cluster, g *v1alpha1.Guard) (gitwrite.Remote, gitwrite.Signature, string, error) {
	remote, err := o.remote(ctx, k, g)
	if err != nil {
		return gitwrite.Remote{}, gitwrite.Signature{}, "", err
	}
	author, user, err := o.signature(ctx, k)
	if err != nil {
		return gitwrite.Remote{}, gitwrite.Signature{}, "", err
	}
	return remote, author, user, nil
}

// commit makes edit on the branch of g's source and pushes it as one
// commit (Git clones of depth, 0 for the whole history), retried when the
// branch moved: what adopt and rollback share. With --dry-run it makes the
// edit on a clone, prints the diff and the commit it would make, pushes
// nothing and returns a nil result. An edit that changes nothing is
// gitwrite.ErrNoChange, with the result's Base the commit found.
func (o *writeOptions) commit(ctx context.Context, out io.Writer, g *v1alpha1.Guard, remote gitwrite.Remote, author gitwrite.Signature, depth int, edit gitwrite.EditFunc) (*gitwrite.Result, error) {
	if !o.dryRun {
		res, err := gitwrite.Update(ctx, remote, gitwrite.Options{Author: author, Depth: depth, Log: logr.Discard()}, edit)
		return &res, err
	}
	c, err := gitwrite.Clone(ctx, remote, depth)
	if err != nil {
		return nil, err
	}
	msg, err := edit(ctx, c)
	if err != nil {
		return &gitwrite.Result{Base: c.Base()}, err
	}
	diff, err := c.Diff(ctx)
	if err != nil {
		return nil, err
	}
	if diff == "" {
		return &gitwrite.Result{Base: c.Base()}, gitwrite.ErrNoChange
	}
	fmt.Fprintf(out, "%s\n", diff)
	fmt.Fprintf(out, "dry run: would commit to branch %s of %s on top of %.7s:\n\n%s", remote.Branch, redact.URL(g.Spec.Git.URL), c.Base(), indent(msg))
	return nil, nil
}
