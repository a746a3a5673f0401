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
	fmt.Fprintf(out, "dry run: would commit to branch %s of %s on top of %.7s:\n\n%s", remote.Branch, redact.URL(g.Spec.URL), c.Base(), indent(msg))
	return nil, nil
}
