package gitserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Repo is a working clone of a repository served by a Server. A test or the
// demo edits it and pushes; every operation runs real git commands.
type Repo struct {
	// Dir is the working tree.
	Dir  string
	home string
}

// NewRepo creates the bare repository NAME.git below the server's root with
// default branch main, accepting pushes over HTTP, and a working clone of it
// in a temporary folder with user.name and user.email configured. The clone
// is removed when the server closes.
func (s *Server) NewRepo(name string) (*Repo, error) {
	ctx := context.Background()
	name = strings.TrimSuffix(name, ".git")
	if name == "" || !filepath.IsLocal(name) {
		return nil, fmt.Errorf("new repo %q: invalid name", name)
	}
	bare := filepath.Join(s.root, name+".git")
	if _, err := os.Stat(bare); err == nil {
		return nil, fmt.Errorf("new repo %s: %s already exists", name, bare)
	}
	if _, err := runGit(ctx, s.home, s.root, "init", "--bare", "--quiet", "--initial-branch=main", bare); err != nil {
		return nil, fmt.Errorf("new repo %s: %w", name, err)
	}
	if _, err := runGit(ctx, s.home, bare, "config", "http.receivepack", "true"); err != nil {
		return nil, fmt.Errorf("new repo %s: %w", name, err)
	}

	dir, err := os.MkdirTemp("", "gitserver-clone-"+filepath.Base(name)+"-")
	if err != nil {
		return nil, fmt.Errorf("new repo %s: create working folder: %w", name, err)
	}
	s.mu.Lock()
	s.clones = append(s.clones, dir)
	s.mu.Unlock()

	steps := [][]string{
		{"init", "--quiet", "--initial-branch=main"},
		{"config", "user.name", "driftguard test"},
		{"config", "user.email", "test@driftguard.invalid"},
		{"config", "commit.gpgsign", "false"},
		{"config", "tag.gpgsign", "false"},
		{"remote", "add", "origin", s.URL(name)},
	}
	for _, args := range steps {
		if _, err := runGit(ctx, s.home, dir, args...); err != nil {
			return nil, fmt.Errorf("new repo %s: %w", name, err)
		}
	}
	return &Repo{Dir: dir, home: s.home}, nil
}

func (r *Repo) git(args ...string) (string, error) {
	return runGit(context.Background(), r.home, r.Dir, args...)
}

// abs maps a slash-separated path relative to the repository root to a path
// on disk, refusing paths that leave the working tree.
func (r *Repo) abs(path string) (string, error) {
	p := filepath.FromSlash(path)
	if p == "" || p == "." {
		return r.Dir, nil
	}
	if !filepath.IsLocal(p) {
		return "", fmt.Errorf("path %q is outside the repository", path)
	}
	return filepath.Join(r.Dir, p), nil
}

// WriteFile writes content to path (relative to the repository root),
// creating parent folders.
func (r *Repo) WriteFile(path, content string) error {
	dst, err := r.abs(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(dst, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Remove deletes path (a file or a folder) from the working tree.
func (r *Repo) Remove(path string) error {
	dst, err := r.abs(path)
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if dst == r.Dir {
		return fmt.Errorf("remove %s: refusing to remove the repository root", path)
	}
	if _, err := os.Lstat(dst); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// CopyDir copies the files below src on disk into the repository at dst
// ("" is the root). Existing files are overwritten; symlinks are skipped.
func (r *Repo) CopyDir(src, dst string) error {
	base, err := r.abs(dst)
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(base, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, filepath.Join(base, rel))
	})
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, in)
	return err
}

// Commit stages every change (git add -A), commits with msg and returns the
// full SHA of the new commit. An empty change set still makes a commit.
func (r *Repo) Commit(msg string) (string, error) {
	if _, err := r.git("add", "-A"); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if _, err := r.git("commit", "--quiet", "--allow-empty", "-m", msg); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	sha, err := r.git("rev-parse", "HEAD")
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	return sha, nil
}

// Push pushes the current branch to origin.
func (r *Repo) Push() error {
	if _, err := r.git("push", "--quiet", "--set-upstream", "origin", "HEAD"); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	return nil
}

// CommitAndPush commits every change with msg, pushes and returns the SHA.
func (r *Repo) CommitAndPush(msg string) (string, error) {
	sha, err := r.Commit(msg)
	if err != nil {
		return "", err
	}
	if err := r.Push(); err != nil {
		return "", err
	}
	return sha, nil
}

// Tag creates the lightweight tag name on HEAD and pushes it.
func (r *Repo) Tag(name string) error {
	if _, err := r.git("tag", name); err != nil {
		return fmt.Errorf("tag %s: %w", name, err)
	}
	if _, err := r.git("push", "--quiet", "origin", "refs/tags/"+name); err != nil {
		return fmt.Errorf("tag %s: %w", name, err)
	}
	return nil
}
