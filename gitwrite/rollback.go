package gitwrite

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// Rollback makes dir ("" for the whole repository) of the checkout's tree
// equal to dir at the commit rev names; every other path keeps what the
// branch has. It returns that commit. A revision without dir is an error:
// rolling back to it would delete what the Guard applies. It needs a full
// clone (depth 0) to find older commits.
func (c *Checkout) Rollback(rev, dir string) (*object.Commit, error) {
	target, err := c.Resolve(rev)
	if err != nil {
		return nil, err
	}
	src, err := target.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", target.Hash, err)
	}
	parts, err := split(dir)
	if err != nil {
		return nil, err
	}
	if len(parts) > 0 {
		if _, err := src.FindEntry(strings.Join(parts, "/")); err != nil {
			return nil, fmt.Errorf("revision %s has no %s: rolling back to it would remove what the Guard applies", short(target.Hash.String()), dir)
		}
	}
	if err := c.tree.CopyFrom(src, dir); err != nil {
		return nil, err
	}
	return target, nil
}

// RollbackNote describes a rollback, for the commit message.
type RollbackNote struct {
	// Summary replaces the generated first line.
	Summary string
	// Guard is the Guard whose path is rolled back.
	Guard string
	// Dir is the rolled back path; "" is the whole repository.
	Dir string
	// Target is the commit rolled back to; Base the branch head it goes on.
	Target *object.Commit
	Base   string
	// By is who ran the rollback.
	By string
}

// Message is the commit message of the rollback.
func (n RollbackNote) Message() string {
	where := n.Dir
	if where == "" || where == "." {
		where = "the repository"
	}
	summary := strings.TrimSpace(n.Summary)
	if summary == "" {
		summary = fmt.Sprintf("roll back %s to %s", where, short(n.Target.Hash.String()))
	}
	var b strings.Builder
	b.WriteString(summary)
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "Restores %s to its state at %s (%s), on top of %s.\n\n", where, n.Target.Hash, firstLine(n.Target.Message), short(n.Base))
	writeTrailers(&b, "Rolled-back-by", n.By, "Guard", n.Guard)
	return b.String()
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
