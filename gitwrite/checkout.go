package gitwrite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/driftguard/driftguard/redact"
)

// ErrNoChange is returned when an edit leaves the tree as it was: there is
// nothing to commit.
var ErrNoChange = errors.New("nothing to commit: the tree is unchanged")

// Signature names the author of a commit.
type Signature struct {
	Name, Email string
}

// Checkout is one branch cloned into memory, with its newest commit's tree
// open for editing.
type Checkout struct {
	remote Remote
	auth   transport.AuthMethod
	repo   *git.Repository
	base   *object.Commit
	tree   *Tree
	commit *object.Commit // made by Commit
}

// Clone clones the remote branch into memory. depth 1 fetches only the
// newest commit; 0 fetches the whole history and the tags, so that Resolve
// finds older revisions.
func Clone(ctx context.Context, r Remote, depth int) (*Checkout, error) {
	am, err := authMethod(r.URL, r.Auth)
	if err != nil {
		return nil, fmt.Errorf("%s: auth: %w", redact.URL(r.URL), err)
	}
	if r.Branch == "" {
		return nil, fmt.Errorf("%s: no branch given", redact.URL(r.URL))
	}
	branch := plumbing.NewBranchReferenceName(r.Branch)
	tags := git.NoTags
	if depth == 0 {
		tags = git.AllTags
	}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL: r.URL, Auth: am, ReferenceName: branch, SingleBranch: true, Depth: depth, Tags: tags,
	})
	if err != nil {
		return nil, fmt.Errorf("clone branch %s of %s: %w", r.Branch, redact.URL(r.URL), err)
	}
	ref, err := repo.Reference(branch, true)
	if err != nil {
		return nil, fmt.Errorf("clone branch %s of %s: %w", r.Branch, redact.URL(r.URL), err)
	}
	base, err := repo.CommitObject(ref.Hash())
	if err != nil {
		return nil, fmt.Errorf("read commit %s: %w", ref.Hash(), err)
	}
	tree, err := newTree(repo.Storer, base.TreeHash)
	if err != nil {
		return nil, err
	}
	return &Checkout{remote: r, auth: am, repo: repo, base: base, tree: tree}, nil
}

// Base returns the SHA of the commit the checkout started from.
func (c *Checkout) Base() string { return c.base.Hash.String() }

// Branch returns the branch name.
func (c *Checkout) Branch() string { return c.remote.Branch }

// Tree returns the tree being edited.
func (c *Checkout) Tree() *Tree { return c.tree }

// Resolve returns the commit rev names: a SHA (full or abbreviated), a tag,
// a branch, or an expression such as HEAD~2. Older commits need a full
// clone (depth 0).
func (c *Checkout) Resolve(rev string) (*object.Commit, error) {
	h, err := c.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("revision %q not found on branch %s or its tags: %w", rev, c.remote.Branch, err)
	}
	commit, err := c.repo.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	return commit, nil
}

// Diff returns the edits as a unified diff against the base commit.
func (c *Checkout) Diff(ctx context.Context) (string, error) {
	h, err := c.tree.Hash()
	if err != nil {
		return "", err
	}
	to, err := object.GetTree(c.repo.Storer, h)
	if err != nil {
		return "", err
	}
	from, err := c.base.Tree()
	if err != nil {
		return "", err
	}
	patch, err := from.PatchContext(ctx, to)
	if err != nil {
		return "", fmt.Errorf("diff: %w", err)
	}
	return patch.String(), nil
}

// Commit records the edited tree as a new commit on the branch (in memory;
// Push sends it) and returns its SHA. It returns ErrNoChange when the tree
// is the base commit's.
func (c *Checkout) Commit(author Signature, message string) (string, error) {
	if strings.TrimSpace(author.Name) == "" {
		return "", errors.New("commit: the author has no name")
	}
	if strings.TrimSpace(message) == "" {
		return "", errors.New("commit: empty message")
	}
	h, err := c.tree.Hash()
	if err != nil {
		return "", err
	}
	if h == c.base.TreeHash {
		return "", ErrNoChange
	}
	sig := object.Signature{Name: author.Name, Email: author.Email, When: time.Now()}
	commit := &object.Commit{Author: sig, Committer: sig, Message: strings.TrimRight(message, "\n") + "\n", TreeHash: h, ParentHashes: []plumbing.Hash{c.base.Hash}}
	obj := c.repo.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return "", fmt.Errorf("encode commit: %w", err)
	}
	ch, err := c.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return "", fmt.Errorf("store commit: %w", err)
	}
	if err := c.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(c.remote.Branch), ch)); err != nil {
		return "", fmt.Errorf("update branch %s: %w", c.remote.Branch, err)
	}
	commit.Hash = ch
	c.commit = commit
	return ch.String(), nil
}

// Push sends the commit Commit made to the remote branch. It fails when the
// branch moved on the remote since the clone; Update handles that.
func (c *Checkout) Push(ctx context.Context) error {
	if c.commit == nil {
		return errors.New("push: no commit to push")
	}
	ref := plumbing.NewBranchReferenceName(c.remote.Branch)
	err := c.repo.PushContext(ctx, &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:       c.auth,
	})
	if err != nil {
		return fmt.Errorf("push %.7s to branch %s of %s: %w", c.commit.Hash, c.remote.Branch, redact.URL(c.remote.URL), err)
	}
	return nil
}

// moved reports whether the remote branch is no longer at the base commit.
func (c *Checkout) moved(ctx context.Context) (bool, error) {
	h, err := remoteHead(ctx, c.remote, c.auth)
	if err != nil {
		return false, err
	}
	return h != c.base.Hash, nil
}

// IsAncestor reports whether commit ancestor is rev itself or in rev's
// history on the branch (cloned whole).
func IsAncestor(ctx context.Context, r Remote, ancestor, rev string) (bool, error) {
	if ancestor == rev {
		return true, nil
	}
	c, err := Clone(ctx, r, 0)
	if err != nil {
		return false, err
	}
	a, err := c.Resolve(ancestor)
	if err != nil {
		return false, err
	}
	d, err := c.Resolve(rev)
	if err != nil {
		return false, err
	}
	return a.IsAncestor(d)
}
