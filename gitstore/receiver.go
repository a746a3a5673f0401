package gitstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/go-logr/logr"
)

// Receiver is the push webhook: a Git server (GitHub, GitLab, Gitea, or any
// script) POSTs to it after a push, and OnPush is told the repository URLs the
// payload names, so the Guards of that repository reconcile at once instead
// of at their next interval.
type Receiver struct {
	// Token, when set, must come as the X-Driftguard-Token header or
	// GitLab's X-Gitlab-Token, or be the HMAC-SHA256 key of the body's
	// signature: GitHub's X-Hub-Signature-256 ("sha256=HEX"), Gitea's
	// X-Gitea-Signature or Gogs' X-Gogs-Signature (HEX). Empty accepts
	// every push. SetToken replaces it.
	Token  string
	OnPush func(urls []string)
	Log    logr.Logger

	token atomic.Pointer[string] // set by SetToken
}

// NewReceiver returns a Receiver that calls onPush for pushes that carry
// or are signed with token (empty: every push).
func NewReceiver(token string, onPush func(urls []string), log logr.Logger) *Receiver {
	return &Receiver{Token: token, OnPush: onPush, Log: log}
}

// SetToken replaces the token, e.g. when its Secret changes. It is safe to
// call while the Receiver serves.
func (rc *Receiver) SetToken(token string) { rc.token.Store(&token) }

func (rc *Receiver) currentToken() string {
	if t := rc.token.Load(); t != nil {
		return *t
	}
	return rc.Token
}

// SecretToken is the key of the receiver's token in a Secret.
const SecretToken = "token"

// TokenFromSecret returns the receiver token of a Secret's data: key
// "token", without surrounding white space (a file's final newline).
func TokenFromSecret(data map[string][]byte) (string, error) {
	t := strings.TrimSpace(string(data[SecretToken]))
	if t == "" {
		return "", fmt.Errorf("secret key %q is missing or empty", SecretToken)
	}
	return t, nil
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
	if why := rc.unauthorized(r.Header, body); why != "" {
		rc.Log.Info("push rejected", "reason", why, "remote", r.RemoteAddr)
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

// tokenHeaders carry the token itself.
var tokenHeaders = []string{"X-Driftguard-Token", "X-Gitlab-Token"}

// signatureHeaders carry the hex HMAC-SHA256 of the body keyed with the
// token, after a prefix.
var signatureHeaders = []struct{ name, prefix string }{
	{"X-Hub-Signature-256", "sha256="}, // GitHub, and Gitea since 1.17
	{"X-Gitea-Signature", ""},
	{"X-Gogs-Signature", ""},
}

// unauthorized says why a push is refused, or "" when it carries the token
// or a valid signature of body.
func (rc *Receiver) unauthorized(h http.Header, body []byte) string {
	token := rc.currentToken()
	if token == "" {
		return ""
	}
	why := "no token or signature header"
	for _, name := range tokenHeaders {
		v := h.Get(name)
		if v == "" {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(v), []byte(token)) == 1 {
			return ""
		}
		why = "wrong " + name
	}
	var mac []byte
	for _, sh := range signatureHeaders {
		v := h.Get(sh.name)
		if v == "" {
			continue
		}
		if mac == nil {
			m := hmac.New(sha256.New, []byte(token))
			m.Write(body)
			mac = m.Sum(nil)
		}
		hexSig, ok := strings.CutPrefix(v, sh.prefix)
		sig, err := hex.DecodeString(hexSig)
		if ok && err == nil && hmac.Equal(sig, mac) {
			return ""
		}
		why = "wrong " + sh.name
	}
	return why
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
