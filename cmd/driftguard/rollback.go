package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/gitwrite"
)

type rollbackOptions struct {
	writeOptions
	to string
}

func newRollbackCommand() *cobra.Command {
	o := &rollbackOptions{}
	cmd := &cobra.Command{
		Use:   "rollback GUARD --to REV [--message M] [--dry-run]",
		Short: "Commit, on a Guard's branch, the Guard's path as it was at an older revision",
		Long: `rollback writes a new commit on the branch a Guard follows whose tree at
the Guard's path equals that path at REV; every other path keeps what the
branch has, and history is not rewritten. The guard then applies it through
its normal loop (at once with a push notification, else at its next
interval). REV is a commit SHA (full or abbreviated), a tag, or an expression
such as HEAD~2, resolved once on the branch's history.

rollback prints the new commit's SHA on stdout. A Guard that follows a tag
or a commit SHA has no branch to commit to: rollback refuses it; point the
Guard at an older tag or SHA instead.

Credentials: --git-token or --git-username/--git-password, else the Secret the
Guard's spec.git.secretRef names, read with the same kubeconfig.`,
		Example: `  driftguard rollback shop --to 4f2a9c1
  driftguard rollback shop --to HEAD~1 --message "undo the sale prices" --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRollback(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], o)
		},
	}
	o.bind(cmd)
	cmd.Flags().StringVar(&o.to, "to", "", "the revision to roll the Guard's path back to (required)")
	return cmd
}

func runRollback(ctx context.Context, out, errOut io.Writer, guard string, o *rollbackOptions) error {
	if strings.TrimSpace(o.to) == "" {
		return errors.New("--to REV is required: the revision to roll back to")
	}
	k, err := connect(o.kubeconfig)
	if err != nil {
		return err
	}
	g, err := k.guard(ctx, guard)
	if err != nil {
		return err
	}
	remote, author, user, err := o.pushTo(ctx, k, g)
	if err != nil {
		return err
	}
	dir := cleanPath(g.Spec.Git.Path)
	where := pathOrRoot(dir)
	// REV is resolved once: an expression such as HEAD~1 must not mean
	// another commit when the branch moved and the push is retried.
	rev := o.to
	edit := func(_ context.Context, c *gitwrite.Checkout) (string, error) {
		target, err := c.Rollback(rev, dir)
		if err != nil {
			return "", err
		}
		rev = target.Hash.String()
		return gitwrite.RollbackNote{Summary: o.message, Guard: g.Name, Dir: dir, Target: target, Base: c.Base(), By: user}.Message(), nil
	}

	res, err := o.commit(ctx, out, g, remote, author, 0, edit)
	if errors.Is(err, gitwrite.ErrNoChange) {
		fmt.Fprintf(errOut, "%s on branch %s already equals %.7s; nothing to roll back\n", where, remote.Branch, rev)
		if !o.dryRun {
			fmt.Fprintln(out, res.Base)
		}
		return nil
	}
	if err != nil || res == nil {
		return err
	}
	fmt.Fprintf(errOut, "rolled back %s of guard %s to %.7s: commit %.7s on branch %s\n", where, g.Name, rev, res.SHA, remote.Branch)
	fmt.Fprintln(out, res.SHA)
	return nil
}

// cleanPath turns a Guard's spec.git.path into a repository path; "" is the root.
func cleanPath(p string) string {
	c := path.Clean("/" + strings.ReplaceAll(p, "\\", "/"))
	return strings.TrimPrefix(c, "/")
}
