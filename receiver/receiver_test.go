package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

func TestReceiver(t *testing.T) {
	github := `{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example/org/infra.git","html_url":"https://git.example/org/infra"}}`
	gitea := `{"ref":"refs/heads/main","repository":{"clone_url":"https://gitea.example/org/infra.git","ssh_url":"git@gitea.example:org/infra.git"}}`
	githubURLs := []string{"https://git.example/org/infra.git", "https://git.example/org/infra"}
	giteaURLs := []string{"https://gitea.example/org/infra.git", "git@gitea.example:org/infra.git"}
	hexMAC := func(body, key string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(body))
		return hex.EncodeToString(m.Sum(nil))
	}
	sign := func(body, key string) string { return "sha256=" + hexMAC(body, key) }
	tests := []struct {
		name    string
		token   string
		body    string
		headers map[string]string
		code    int
		urls    []string
	}{
		{"no token set: closed", "", github, nil, http.StatusForbidden, nil},
		{"no token set: closed to a token too", "", github, map[string]string{"X-Driftguard-Token": ""}, http.StatusForbidden, nil},
		{"driftguard token", "s3cret", github, map[string]string{"X-Driftguard-Token": "s3cret"}, http.StatusAccepted, githubURLs},
		{"wrong driftguard token", "s3cret", github, map[string]string{"X-Driftguard-Token": "s3cre"}, http.StatusUnauthorized, nil},
		{"gitlab with token", "s3cret", `{"project":{"git_http_url":"https://gl.example/a/b.git"}}`, map[string]string{"X-Gitlab-Token": "s3cret"}, http.StatusAccepted, []string{"https://gl.example/a/b.git"}},
		{"gitlab wrong token", "s3cret", `{"project":{"git_http_url":"https://gl.example/a/b.git"}}`, map[string]string{"X-Gitlab-Token": "nope"}, http.StatusUnauthorized, nil},
		{"github signature", "s3cret", github, map[string]string{"X-Hub-Signature-256": sign(github, "s3cret")}, http.StatusAccepted, githubURLs},
		{"github signature upper-case hex", "s3cret", github, map[string]string{"X-Hub-Signature-256": "sha256=" + strings.ToUpper(hexMAC(github, "s3cret"))}, http.StatusAccepted, githubURLs},
		{"github bad signature", "s3cret", github, map[string]string{"X-Hub-Signature-256": sign(github, "wrong")}, http.StatusUnauthorized, nil},
		{"github signature without prefix", "s3cret", github, map[string]string{"X-Hub-Signature-256": hexMAC(github, "s3cret")}, http.StatusUnauthorized, nil},
		{"github signature of another body", "s3cret", github, map[string]string{"X-Hub-Signature-256": sign(gitea, "s3cret")}, http.StatusUnauthorized, nil},
		{"gitea signature", "s3cret", gitea, map[string]string{"X-Gitea-Signature": hexMAC(gitea, "s3cret")}, http.StatusAccepted, giteaURLs},
		{"gitea bad signature", "s3cret", gitea, map[string]string{"X-Gitea-Signature": hexMAC(gitea, "wrong")}, http.StatusUnauthorized, nil},
		{"gitea signature not hex", "s3cret", gitea, map[string]string{"X-Gitea-Signature": "zz" + hexMAC(gitea, "s3cret")[2:]}, http.StatusUnauthorized, nil},
		{"gogs signature", "s3cret", gitea, map[string]string{"X-Gogs-Signature": hexMAC(gitea, "s3cret")}, http.StatusAccepted, giteaURLs},
		{"gogs bad signature", "s3cret", gitea, map[string]string{"X-Gogs-Signature": hexMAC(gitea+" ", "s3cret")}, http.StatusUnauthorized, nil},
		{"unsigned", "s3cret", `{"url":"x"}`, nil, http.StatusUnauthorized, nil},
		{"signed but not json", "s3cret", "nope", map[string]string{"X-Gitea-Signature": hexMAC("nope", "s3cret")}, http.StatusBadRequest, nil},
		{"unsigned and not json", "s3cret", "nope", nil, http.StatusUnauthorized, nil},
		{"not json", "s3cret", "nope", map[string]string{"X-Driftguard-Token": "s3cret"}, http.StatusBadRequest, nil},
		{"no url", "s3cret", `{}`, map[string]string{"X-Driftguard-Token": "s3cret"}, http.StatusBadRequest, nil},
		{"token longer than the one set", "s3cret", github, map[string]string{"X-Driftguard-Token": "s3cret-and-more"}, http.StatusUnauthorized, nil},
		{"token as a prefix", "s3cret", github, map[string]string{"X-Driftguard-Token": "s3"}, http.StatusUnauthorized, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			rc := NewReceiver(tt.token, func(u []string) { got = u }, logr.Discard())
			req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(tt.body))
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			rc.ServeHTTP(rec, req)
			if rec.Code != tt.code || !reflect.DeepEqual(got, tt.urls) {
				t.Fatalf("code %d urls %v, want %d %v (%s)", rec.Code, got, tt.code, tt.urls, rec.Body)
			}
		})
	}
}

func TestReceiverSetToken(t *testing.T) {
	body := `{"url":"https://git.example/a.git"}`
	calls := 0
	rc := &Receiver{Token: "old", OnPush: func([]string) { calls++ }, Log: logr.Discard()}
	post := func(token string) int {
		req := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
		req.Header.Set("X-Driftguard-Token", token)
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post("old"); code != http.StatusAccepted {
		t.Fatalf("old token before SetToken: %d", code)
	}
	rc.SetToken("new")
	if code := post("old"); code != http.StatusUnauthorized {
		t.Fatalf("old token after SetToken: %d", code)
	}
	if code := post("new"); code != http.StatusAccepted {
		t.Fatalf("new token: %d", code)
	}
	if calls != 2 {
		t.Fatalf("OnPush called %d times, want 2", calls)
	}
	if code := func() int {
		req := httptest.NewRequest(http.MethodGet, "/hook", nil)
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		return rec.Code
	}(); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", code)
	}
}

func TestTokenFromSecret(t *testing.T) {
	tests := []struct {
		data map[string][]byte
		want string
		err  string
	}{
		{map[string][]byte{"token": []byte("s3cret\n")}, "s3cret", ""},
		{map[string][]byte{"token": []byte("  ")}, "", `secret key "token" is missing or empty`},
		{map[string][]byte{"other": []byte("x")}, "", `secret key "token" is missing or empty`},
	}
	for _, tt := range tests {
		got, err := TokenFromSecret(tt.data)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
			t.Errorf("TokenFromSecret(%q) = %q, %v; want %q, %q", tt.data, got, err, tt.want, tt.err)
		}
	}
}
