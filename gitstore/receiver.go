package gitstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-logr/logr"
)

// Receiver is the push webhook: a Git server (GitHub, GitLab, Gitea, or any
// script) POSTs to it after a push, and OnPush is told the repository URLs the
// payload names, so the Guards of that repository reconcile at once instead
// of at their next interval.
type Receiver struct {
	// Token, when set, must come as the X-Driftguard-Token header or
	// GitLab's X-Gitlab-Token, or sign the body as GitHub's
	// X-Hub-Signature-256 (HMAC-SHA256) does.
	Token  string
	OnPush func(urls []string)
	Log    logr.Logger
}

// maxPushBody bounds a push payload.
const maxPushBody = 4 << 20

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "push notifications are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPushBody))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !rc.authorized(r, body) {
		http.Error(w, "bad or missing token", http.StatusUnauthorized)
		return
	}
	urls, err := PushURLs(body)
	if err != nil {
		http.Error(w, "push payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(urls) == 0 {
		http.Error(w, "push payload names no repository URL", http.StatusBadRequest)
		return
	}
	rc.Log.Info("push received", "urls", urls)
	rc.OnPush(urls)
	w.WriteHeader(http.StatusAccepted)
}

func (rc *Receiver) authorized(r *http.Request, body []byte) bool {
	if rc.Token == "" {
		return true
	}
	for _, h := range []string{"X-Driftguard-Token", "X-Gitlab-Token"} {
		if v := r.Header.Get(h); v != "" && subtle.ConstantTimeCompare([]byte(v), []byte(rc.Token)) == 1 {
			return true
		}
	}
	if sig, ok := strings.CutPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256="); ok {
		mac := hmac.New(sha256.New, []byte(rc.Token))
		mac.Write(body)
		want := hex.EncodeToString(mac.Sum(nil))
		return hmac.Equal([]byte(sig), []byte(want))
	}
	return false
}

// PushURLs returns the repository URLs a push payload names: GitHub and
// Gitea (repository.clone_url, html_url, ssh_url), GitLab (project.git_http_url,
// git_ssh_url, web_url), or a plain {"url": "..."}.
func PushURLs(body []byte) ([]string, error) {
	var p struct {
		URL        string `json:"url"`
		Repository struct {
			CloneURL string `json:"clone_url"`
			HTMLURL  string `json:"html_url"`
			SSHURL   string `json:"ssh_url"`
		} `json:"repository"`
		Project struct {
			HTTPURL string `json:"git_http_url"`
			SSHURL  string `json:"git_ssh_url"`
			WebURL  string `json:"web_url"`
		} `json:"project"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, err
	}
	var out []string
	for _, u := range []string{p.URL, p.Repository.CloneURL, p.Repository.HTMLURL, p.Repository.SSHURL, p.Project.HTTPURL, p.Project.SSHURL, p.Project.WebURL} {
		if u != "" {
			out = append(out, u)
		}
	}
	return out, nil
}

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
