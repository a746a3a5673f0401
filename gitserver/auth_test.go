package gitserver

import (
	"net/http"
	"strings"
	"testing"
)

func TestPrivate(t *testing.T) {
	s := startServer(t)
	r, err := s.NewRepo("secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteFile("a.yaml", "v: 1\n"); err != nil {
		t.Fatal(err)
	}
	s.Private("secret", "deploy", "s3cret")
	// The working clone still pushes.
	if _, err := r.CommitAndPush("first"); err != nil {
		t.Fatalf("push to a private repository: %v", err)
	}
	if _, err := s.NewRepo("open"); err != nil {
		t.Fatal(err)
	}
	refs := func(repo, user, password string) int {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL(repo)+"/info/refs?service=git-upload-pack", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		name, repo, user, password string
		want                       int
	}{
		{"no credentials", "secret", "", "", http.StatusUnauthorized},
		{"wrong password", "secret", "deploy", "guess", http.StatusUnauthorized},
		{"another user", "secret", "other", "s3cret", http.StatusUnauthorized},
		{"credentials", "secret", "deploy", "s3cret", http.StatusOK},
		{"a path that cleans to the repository", "./x/../secret", "", "", http.StatusUnauthorized},
		{"another repository", "open", "", "", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := refs(tt.repo, tt.user, tt.password); got != tt.want {
				t.Fatalf("GET info/refs of %s = %d, want %d", tt.repo, got, tt.want)
			}
		})
	}
	// git itself: a clone with the credentials in the URL works.
	dir := cloneAndRead(t, s, strings.Replace(s.URL("secret"), "http://", "http://deploy:s3cret@", 1))
	if got := readFile(t, dir+"/a.yaml"); got != "v: 1\n" {
		t.Fatalf("cloned a.yaml = %q", got)
	}
}
