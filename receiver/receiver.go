package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// Receiver is the push webhook: a Git server (GitHub, GitLab, Gitea, or any
// script) POSTs to it after a push, and OnPush is told the repository URLs the
// payload names, so the Guards of that repository reconcile at once instead
// of at their next interval.
//
// It is closed without a token: every request is refused with 403 unless
// AllowUnauthenticated is set. A delivery it has already handled (the same
// delivery ID, or the same signature, within ReplayWindow) is answered 200
// and triggers nothing.
type Receiver struct {
	// Token must come as the X-Driftguard-Token header or GitLab's
	// X-Gitlab-Token, or be the HMAC-SHA256 key of the body's signature:
	// GitHub's X-Hub-Signature-256 ("sha256=HEX"), Gitea's
	// X-Gitea-Signature or Gogs' X-Gogs-Signature (HEX). SetToken
	// replaces it.
	Token string
	// AllowUnauthenticated accepts every push while there is no token
	// (--receiver-allow-unauthenticated). Without it, and without a token,
	// every request is refused.
	AllowUnauthenticated bool
	// ReplayWindow is how long a handled delivery is remembered
	// (DefaultReplayWindow when zero); at most MaxDeliveries
	// (DefaultMaxDeliveries when zero) are, the oldest forgotten first.
	ReplayWindow  time.Duration
	MaxDeliveries int
	// ReadTimeout bounds reading one request's body (DefaultReadTimeout
	// when zero); the server's ReadHeaderTimeout bounds its headers.
	ReadTimeout time.Duration
	OnPush      func(urls []string)
	Log         logr.Logger

	token atomic.Pointer[string] // set by SetToken

	seenOnce sync.Once
	seen     *deliveries
	now      func() time.Time // for tests; time.Now when nil
}

// Defaults of a Receiver.
const (
	DefaultReplayWindow  = time.Hour
	DefaultMaxDeliveries = 4096
	DefaultReadTimeout   = 10 * time.Second
	// MaxPushBody bounds a push payload; a larger one is answered 413.
	MaxPushBody = 4 << 20
)

// NewReceiver returns a Receiver that calls onPush for pushes that carry
// or are signed with token. With an empty token it refuses every push.
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

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "push notifications are POSTed", http.StatusMethodNotAllowed)
		return
	}
	token := rc.currentToken()
	if token == "" && !rc.AllowUnauthenticated {
		rc.Log.Info("push refused: the receiver has no token", "remote", r.RemoteAddr)
		http.Error(w, "the push receiver has no token and refuses every push", http.StatusForbidden)
		return
	}
	// The server bounds the headers; this bounds the body (a client
	// trickling it would hold the connection).
	readTimeout := rc.ReadTimeout
	if readTimeout <= 0 {
		readTimeout = DefaultReadTimeout
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(readTimeout)) // not every ResponseWriter supports it
	// A declared length over the bound is refused unread.
	if r.ContentLength > MaxPushBody {
		http.Error(w, fmt.Sprintf("push payload larger than %d bytes", MaxPushBody), http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxPushBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, fmt.Sprintf("push payload larger than %d bytes", MaxPushBody), http.StatusRequestEntityTooLarge)
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			rc.Log.Info("push refused: body not read in time", "remote", r.RemoteAddr, "timeout", readTimeout)
			http.Error(w, "push payload not received in time", http.StatusRequestTimeout)
			return
		}
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	auth := authenticated{}
	if token != "" {
		if auth = authenticate(token, r.Header, body); auth.refused != "" {
			rc.Log.Info("push rejected", "reason", auth.refused, "remote", r.RemoteAddr)
			http.Error(w, "bad or missing token", http.StatusUnauthorized)
			return
		}
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
	if id := deliveryKeys(r.Header, auth.signature); len(id) > 0 && rc.deliveries().seenBefore(id, rc.clock()) {
		rc.Log.Info("push already handled; not triggered again", "delivery", id[0], "urls", urls)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "delivery already handled\n")
		return
	}
	rc.Log.Info("push received", "urls", urls)
	rc.OnPush(urls)
	w.WriteHeader(http.StatusAccepted)
}

func (rc *Receiver) clock() time.Time {
	if rc.now != nil {
		return rc.now()
	}
	return time.Now()
}

func (rc *Receiver) deliveries() *deliveries {
	rc.seenOnce.Do(func() {
		window, size := rc.ReplayWindow, rc.MaxDeliveries
		if window <= 0 {
			window = DefaultReplayWindow
		}
		if size <= 0 {
			size = DefaultMaxDeliveries
		}
		rc.seen = newDeliveries(window, size)
	})
	return rc.seen
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
