package gitserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"path"
	"strings"
)

// credential is the user and password a private repository is read with.
type credential struct{ user, password string }

// Private makes repo readable over HTTP only with HTTP basic auth as user
// with password, as a Git host serves a private repository: a clone or
// fetch without them (or with others) is answered 401 with a
// WWW-Authenticate challenge. Pushes (the working clones of NewRepo push
// over HTTP) are not restricted. A name without the .git suffix gets it.
func (s *Server) Private(repo, user, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.private == nil {
		s.private = map[string]credential{}
	}
	s.private[repoName(repo)] = credential{user: user, password: password}
}

func repoName(repo string) string {
	repo = strings.Trim(repo, "/")
	if path.Ext(repo) != ".git" {
		repo += ".git"
	}
	return repo
}

// authorizing answers 401 to a read of a private repository without its
// credentials.
func (s *Server) authorizing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.readAllowed(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="gitserver"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readAllowed reports whether r may go on: it is no read of a private
// repository, or it carries the repository's credentials.
func (s *Server) readAllowed(r *http.Request) bool {
	p := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if strings.HasSuffix(p, "/git-receive-pack") || (strings.HasSuffix(p, "/info/refs") && r.URL.Query().Get("service") == "git-receive-pack") {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for repo, want := range s.private {
		if p != repo && !strings.HasPrefix(p, repo+"/") {
			continue
		}
		user, password, ok := r.BasicAuth()
		return ok && equal(user, want.user) && equal(password, want.password)
	}
	return true
}

func equal(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}
