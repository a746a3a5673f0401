// Package gitserver runs a real smart-HTTP Git server on loopback, backed by
// the system git binary (git http-backend), and offers working clones that
// tests and the demo edit, commit and push with real git commands.
package gitserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Server serves every bare repository below its root over smart HTTP.
type Server struct {
	root    string
	home    string // isolated HOME for every git process the server starts
	gitPath string
	handler http.Handler
	ln      net.Listener
	addr    string // host:port, the same after Resume
	srv     *http.Server
	done    chan error

	mu     sync.Mutex
	clones []string // working clones to remove on Close
	closed bool
	paused bool // between Pause and Resume: nothing listens
	onPush func(url string)
	// private repositories (Private) and their credentials, by
	// repository path ("shop.git")
	private map[string]credential
}

// Start serves the bare repositories below root on 127.0.0.1 with a random port.
func Start(root string) (*Server, error) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("find git binary: %w", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve root %s: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create root %s: %w", abs, err)
	}
	home, err := os.MkdirTemp("", "gitserver-home-")
	if err != nil {
		return nil, fmt.Errorf("create git home: %w", err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(homeConfig), 0o644); err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("write git home's configuration: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(home)
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	s := &Server{root: abs, home: home, gitPath: gitPath, ln: ln, addr: ln.Addr().String(), done: make(chan error, 1)}
	s.handler = s.authorizing(s.newHandler())
	s.srv = &http.Server{Handler: s.notifying(s.handler)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// homeConfig is the configuration of every git process the server starts,
// on either side: no automatic housekeeping (git commit started git
// maintenance, and every push to the server git gc, each a process that
// found nothing to do). The working clones keep their committer in their
// own configuration: tests run git in them with other homes.
const homeConfig = `[gc]
	auto = 0
[maintenance]
	auto = false
[receive]
	autogc = false
`

// newHandler wraps git http-backend as a CGI handler.
func (s *Server) newHandler() http.Handler {
	env := []string{
		"GIT_PROJECT_ROOT=" + s.root,
		"GIT_HTTP_EXPORT_ALL=1",
		"GIT_CONFIG_NOSYSTEM=1",
		"HOME=" + s.home,
		"XDG_CONFIG_HOME=" + s.home,
	}
	return &cgi.Handler{
		Path: s.gitPath,
		Args: []string{"http-backend"},
		Dir:  s.root,
		Env:  env,
		// PATH lets git find its helpers (git-upload-pack, git-receive-pack).
		InheritEnv: []string{"PATH"},
		// git http-backend's complaints (e.g. an unknown repository) reach
		// the client as HTTP errors; keep them off the test output.
		Stderr: io.Discard,
	}
}

// OnPush sets a function that is called with a repository's clone URL after every push
// to it, as a Git host's push webhook would be.
func (s *Server) OnPush(fn func(url string)) {
	s.mu.Lock()
	s.onPush = fn
	s.mu.Unlock()
}

// notifying calls the OnPush function after a receive-pack request.
func (s *Server) notifying(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			return
		}
		s.mu.Lock()
		fn := s.onPush
		s.mu.Unlock()
		if fn != nil {
			repo := strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/git-receive-pack"), "/")
			fn(s.URL(repo))
		}
	})
}

// Handler returns the HTTP handler that serves the repositories, so a caller
// can mount it on a server of its own.
func (s *Server) Handler() http.Handler { return s.handler }

// URL returns the clone URL of repo, e.g. http://127.0.0.1:PORT/shop.git.
// A name without the .git suffix gets it.
func (s *Server) URL(repo string) string {
	if filepath.Ext(repo) != ".git" {
		repo += ".git"
	}
	return "http://" + s.addr + "/" + repo
}

// Close stops the server and removes the working clones made by NewRepo and
// the server's private git home. The bare repositories below root stay.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	clones := s.clones
	s.clones = nil
	paused := s.paused
	s.mu.Unlock()

	var err error
	if !paused {
		err = s.srv.Shutdown(context.Background())
		if serveErr := <-s.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, fmt.Errorf("serve: %w", serveErr))
		}
	}
	for _, dir := range append(clones, s.home) {
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("remove %s: %w", dir, rmErr))
		}
	}
	if err != nil {
		return fmt.Errorf("close git server: %w", err)
	}
	return nil
}

// Pause stops serving at once, as a Git host that went down: the listener
// and every open connection are closed, so clients get connection errors.
// The repositories and the address stay; Resume serves again.
func (s *Server) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.paused {
		return errors.New("pause git server: not serving")
	}
	s.paused = true
	err := s.srv.Close()
	if serveErr := <-s.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err != nil {
		return fmt.Errorf("pause git server: %w", err)
	}
	return nil
}

// Resume serves again on the address the server had before Pause.
func (s *Server) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !s.paused {
		return errors.New("resume git server: not paused")
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("resume git server on %s: %w", s.addr, err)
	}
	s.ln, s.paused = ln, false
	s.srv = &http.Server{Handler: s.notifying(s.handler)}
	s.done = make(chan error, 1)
	srv, done := s.srv, s.done
	go func() { done <- srv.Serve(ln) }()
	return nil
}
