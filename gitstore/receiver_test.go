package gitstore

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

func TestSameRepository(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"https://git.example/org/infra.git", "https://git.example/org/infra", true},
		{"https://GIT.example/org/infra/", "http://git.example/org/infra.git", true},
		{"git@git.example:org/infra.git", "https://git.example/org/infra", true},
		{"ssh://git@git.example/org/infra.git", "https://git.example/org/infra", true},
		{"https://git.example/org/infra", "https://git.example/org/other", false},
		{"http://127.0.0.1:4000/shop.git", "http://127.0.0.1:4000/shop", true},
	}
	for _, tt := range tests {
		if got := SameRepository(tt.a, tt.b); got != tt.same {
			t.Errorf("SameRepository(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}

func TestReceiver(t *testing.T) {
	github := `{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example/org/infra.git","html_url":"https://git.example/org/infra"}}`
	sign := func(body, key string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(body))
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	tests := []struct {
		name    string
		token   string
		body    string
		headers map[string]string
		code    int
		urls    []string
	}{
		{"github without token", "", github, nil, http.StatusAccepted, []string{"https://git.example/org/infra.git", "https://git.example/org/infra"}},
		{"gitlab with token", "s3cret", `{"project":{"git_http_url":"https://gl.example/a/b.git"}}`, map[string]string{"X-Gitlab-Token": "s3cret"}, http.StatusAccepted, []string{"https://gl.example/a/b.git"}},
		{"github signature", "s3cret", github, map[string]string{"X-Hub-Signature-256": sign(github, "s3cret")}, http.StatusAccepted, []string{"https://git.example/org/infra.git", "https://git.example/org/infra"}},
		{"bad signature", "s3cret", github, map[string]string{"X-Hub-Signature-256": sign(github, "wrong")}, http.StatusUnauthorized, nil},
		{"missing token", "s3cret", `{"url":"x"}`, nil, http.StatusUnauthorized, nil},
		{"not json", "", "nope", nil, http.StatusBadRequest, nil},
		{"no url", "", `{}`, nil, http.StatusBadRequest, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			rc := &Receiver{Token: tt.token, OnPush: func(u []string) { got = u }, Log: logr.Discard()}
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
