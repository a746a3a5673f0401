package gitwrite

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/source"
)

// Remote is a branch of a Git repository to write to.
type Remote struct {
	URL string
	// Branch is a branch name (main), not a full reference.
	Branch string
	// Auth holds HTTP credentials: Username and Password, or BearerToken.
	Auth *source.Auth
}

// authMethod turns Auth into go-git's for the remote's transport. Package source
// keeps its own conversion unexported, so this one covers what pushing needs
// over HTTP(S): basic auth and bearer tokens.
func authMethod(rawURL string, a *source.Auth) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse URL: %w", err)
	}
	hasHTTP := a != nil && (a.Username != "" || a.Password != "" || a.BearerToken != "")
	hasSSH := a != nil && len(a.SSHKey) > 0
	switch ep.Protocol {
	case "http", "https":
		if err := a.CheckURL(rawURL); err != nil { // never in clear text
			return nil, err
		}
		switch {
		case hasSSH:
			return nil, fmt.Errorf("an %s URL cannot use an SSH key", ep.Protocol)
		case !hasHTTP:
			return nil, nil
		case a.BearerToken != "":
			return &githttp.TokenAuth{Token: a.BearerToken}, nil
		}
		return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
	case "ssh":
		return nil, errors.New("writing over SSH is not supported yet: use the repository's https:// URL with a token")
	}
	if hasHTTP || hasSSH {
		return nil, fmt.Errorf("a %s URL takes no credentials", ep.Protocol)
	}
	return nil, nil
}

// ResolveBranch returns the branch a Guard's ref names: the ref itself when
// it is a branch, the branch the remote's HEAD points at when it is empty. A
// tag or a commit SHA is an error: a Guard that follows one has no branch a
// commit could go to.
func ResolveBranch(ctx context.Context, url, ref string, auth *source.Auth) (string, error) {
	switch {
	case len(ref) == 40 && plumbing.IsHash(ref):
		return "", fmt.Errorf("ref %s is a commit SHA: there is no branch to push to; point the Guard at a branch", ref)
	case strings.HasPrefix(ref, "refs/tags/"):
		return "", fmt.Errorf("ref %s is a tag: there is no branch to push to; point the Guard at a branch", ref)
	case strings.HasPrefix(ref, "refs/") && !strings.HasPrefix(ref, "refs/heads/"):
		return "", fmt.Errorf("ref %s is not a branch: there is no branch to push to", ref)
	}
	am, err := authMethod(url, auth)
	if err != nil {
		return "", fmt.Errorf("%s: auth: %w", redact.URL(url), err)
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: am})
	if err != nil {
		return "", fmt.Errorf("list references of %s: %w", redact.URL(url), err)
	}
	byName := map[plumbing.ReferenceName]*plumbing.Reference{}
	for _, r := range refs {
		byName[r.Name()] = r
	}
	if ref == "" || ref == "HEAD" {
		head := byName[plumbing.HEAD]
		if head == nil {
			return "", fmt.Errorf("%s advertises no HEAD: give the Guard a branch as ref", redact.URL(url))
		}
		if head.Type() == plumbing.SymbolicReference && head.Target().IsBranch() {
			return head.Target().Short(), nil
		}
		var match []string
		for _, r := range refs {
			if r.Name().IsBranch() && r.Hash() == head.Hash() {
				match = append(match, r.Name().Short())
			}
		}
		if len(match) != 1 {
			return "", fmt.Errorf("cannot tell which branch the HEAD of %s is (%d candidates): give the Guard a branch as ref", redact.URL(url), len(match))
		}
		return match[0], nil
	}
	name := strings.TrimPrefix(ref, "refs/heads/")
	if byName[plumbing.NewBranchReferenceName(name)] != nil {
		return name, nil
	}
	if byName[plumbing.NewTagReferenceName(name)] != nil {
		return "", fmt.Errorf("ref %s is a tag: there is no branch to push to; point the Guard at a branch", ref)
	}
	return "", fmt.Errorf("no branch %q on %s", name, redact.URL(url))
}

// remoteHead returns the commit the branch is at on the remote.
func remoteHead(ctx context.Context, r Remote, am transport.AuthMethod) (plumbing.Hash, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{r.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: am})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.NewBranchReferenceName(r.Branch) {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("no branch %q on %s", r.Branch, redact.URL(r.URL))
}
