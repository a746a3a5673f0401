package source

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
)

// TestFetchRefusesCredentialsOverPlainHTTP: credentials never go to an
// http:// URL, loopback included: the fetch fails naming the reason before
// a request is sent. Without credentials plain HTTP still works.
func TestFetchRefusesCredentialsOverPlainHTTP(t *testing.T) {
	gs := newGitServer(t)
	repo, err := gs.NewRepo("shop")
	if err != nil {
		t.Fatal(err)
	}
	mustPush(t, repo, map[string]string{"cm.yaml": configMap("a")}, "initial")
	var requests, withAuth atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "" {
			withAuth.Add(1)
		}
		gs.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	url := front.URL + "/shop.git"
	host := strings.TrimPrefix(front.URL, "http://")

	tests := []struct {
		name string
		url  string
		auth *Auth
		want string
	}{
		{"basic auth", url, &Auth{Username: "deploy", Password: "SECRET-pw"}, "the username and password (basic auth) would go in clear text to http://" + host},
		{"bearer token", url, &Auth{BearerToken: "SECRET-token"}, "the bearerToken would go in clear text to http://" + host},
		{"user and password in the URL", "http://deploy:SECRET-pw@" + host + "/shop.git", nil, "the URL's user information would go in clear text"},
		{"token as the URL's user", "http://ghp_SECRET@" + host + "/shop.git", nil, "the URL's user information would go in clear text"},
	}
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := f.Fetch(t.Context(), Request{URL: tt.url, Ref: "main", Auth: tt.auth})
			var fe *FetchError
			if !errors.As(err, &fe) || !errors.Is(err, ErrPlainHTTPCredentials) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a FetchError wrapping ErrPlainHTTPCredentials saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("the error holds the credentials: %v", err)
			}
			if n := requests.Load(); n != 0 {
				t.Fatalf("%d requests reached the server (%d with credentials), want none", n, withAuth.Load())
			}
		})
	}

	t.Run("anonymous", func(t *testing.T) {
		if _, snap, err := f.Fetch(t.Context(), Request{URL: url, Ref: "main"}); err != nil || len(snap.Objects) != 1 {
			t.Fatalf("anonymous fetch over http: %v", err)
		}
		if withAuth.Load() != 0 {
			t.Fatalf("%d requests carried credentials", withAuth.Load())
		}
	})
}

// TestFetchErrorRedactsURL: a fetch error names the URL without its
// credentials, also where the cause quotes it.
func TestFetchErrorRedactsURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	tests := []struct {
		name, url, want string
	}{
		{"user and token", "https://deploy:SECRET-token@" + closed + "/x.git", "fetch https://" + closed + "/x.git: "},
		{"token as user", "https://ghp_SECRET@" + closed + "/x.git", "fetch https://" + closed + "/x.git: "},
		{"token in the query", "https://" + closed + "/x.git?access_token=SECRET", "fetch https://" + closed + "/x.git?access_token=REDACTED: "},
		{"URL that does not parse", "https://deploy:SECRET@" + closed + "/%zz.git", "fetch https://" + closed + "/%zz.git: "},
	}
	f := NewGitFetcher(t.TempDir(), logr.Discard())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := f.Fetch(t.Context(), Request{URL: tt.url, Ref: "main"})
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("err = %v, want it to start with %q and hold no credentials", err, tt.want)
			}
		})
	}
}
