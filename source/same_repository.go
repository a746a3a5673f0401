package source

import (
	"net/url"
	"strings"
)

// SameRepository reports whether two URLs name the same repository, ignoring
// scheme, user, a trailing .git or slash, and case of the host.
func SameRepository(a, b string) bool {
	return repoID(a) == repoID(b)
}

func repoID(raw string) string {
	s := strings.TrimSpace(raw)
	if u, err := url.Parse(s); err == nil && u.Host != "" {
		s = strings.ToLower(u.Hostname()) + u.Path
	} else if host, path, ok := strings.Cut(strings.TrimPrefix(s, "git@"), ":"); ok && !strings.Contains(host, "/") {
		s = strings.ToLower(host) + "/" + path // scp-like git@host:org/repo
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, "/"), ".git")
	return strings.TrimSuffix(s, "/")
}
