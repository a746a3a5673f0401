package receiver

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// pushes counts the pushes a Receiver triggers.
type pushes struct {
	mu sync.Mutex
	n  int
}

func (p *pushes) onPush([]string) { p.mu.Lock(); p.n++; p.mu.Unlock() }
func (p *pushes) count() int      { p.mu.Lock(); defer p.mu.Unlock(); return p.n }

// serve runs rc on loopback.
func serve(t *testing.T, rc *Receiver) string {
	t.Helper()
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return srv.URL + "/hook"
}

func post(t *testing.T, url, body string, headers map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func signBody(body, key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// TestReceiverClosedWithoutToken: without a token the receiver refuses
// everything, unless it is told to accept unauthenticated pushes.
func TestReceiverClosedWithoutToken(t *testing.T) {
	body := `{"url":"https://git.example/a.git"}`
	tests := []struct {
		name    string
		token   string
		allow   bool
		headers map[string]string
		code    int
	}{
		{"no token", "", false, nil, http.StatusForbidden},
		{"no token, a token header", "", false, map[string]string{"X-Driftguard-Token": "guess"}, http.StatusForbidden},
		{"no token, a signature", "", false, map[string]string{"X-Hub-Signature-256": "sha256=" + signBody(body, "")}, http.StatusForbidden},
		{"no token, opted in", "", true, nil, http.StatusAccepted},
		{"token, opted in, none given", "s3cret", true, nil, http.StatusUnauthorized},
		{"token, opted in, given", "s3cret", true, map[string]string{"X-Driftguard-Token": "s3cret"}, http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p pushes
			rc := NewReceiver(tt.token, p.onPush, logr.Discard())
			rc.AllowUnauthenticated = tt.allow
			url := serve(t, rc)
			if code := post(t, url, body, tt.headers); code != tt.code {
				t.Fatalf("answered %d, want %d", code, tt.code)
			}
			if want := map[bool]int{true: 1}[tt.code == http.StatusAccepted]; p.count() != want {
				t.Fatalf("%d pushes triggered, want %d", p.count(), want)
			}
		})
	}

	t.Run("token removed while serving", func(t *testing.T) {
		var p pushes
		rc := NewReceiver("s3cret", p.onPush, logr.Discard())
		url := serve(t, rc)
		rc.SetToken("")
		if code := post(t, url, body, map[string]string{"X-Driftguard-Token": ""}); code != http.StatusForbidden || p.count() != 0 {
			t.Fatalf("answered %d with %d pushes, want 403 and none", code, p.count())
		}
	})
}

// TestReceiverReplay: a delivery handled once is answered 200 and not
// triggered again within the window, whatever Git host sent it.
func TestReceiverReplay(t *testing.T) {
	const token = "s3cret"
	push := func(sha string) string {
		return fmt.Sprintf(`{"after":%q,"repository":{"clone_url":"https://git.example/org/infra.git"}}`, sha)
	}
	github := func(id, body string) map[string]string {
		return map[string]string{"X-GitHub-Delivery": id, "X-Hub-Signature-256": "sha256=" + signBody(body, token)}
	}
	gitlab := func(id, _ string) map[string]string {
		return map[string]string{"X-Gitlab-Event-UUID": id, "X-Gitlab-Token": token}
	}
	gitea := func(id, body string) map[string]string {
		return map[string]string{"X-Gitea-Delivery": id, "X-Gitea-Signature": signBody(body, token)}
	}
	script := func(_, _ string) map[string]string { return map[string]string{"X-Driftguard-Token": token} }
	type send struct {
		id, sha string
		code    int
	}
	tests := []struct {
		name    string
		headers func(id, body string) map[string]string
		sends   []send
	}{
		{"github redelivery", github, []send{{"d-1", "a1", 202}, {"d-1", "a1", 200}, {"d-2", "a2", 202}}},
		{"github signed body under a new delivery ID", github, []send{{"d-1", "a1", 202}, {"d-9", "a1", 200}}},
		{"gitlab", gitlab, []send{{"u-1", "a1", 202}, {"u-1", "a1", 200}, {"u-1", "a2", 200}, {"u-2", "a2", 202}}},
		{"gitea", gitea, []send{{"g-1", "a1", 202}, {"g-1", "a1", 200}, {"g-2", "a1", 200}, {"g-3", "a3", 202}}},
		{"script without delivery ID: every push counts", script, []send{{"", "a1", 202}, {"", "a1", 202}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p pushes
			url := serve(t, NewReceiver(token, p.onPush, logr.Discard()))
			want := 0
			for i, s := range tt.sends {
				body := push(s.sha)
				if code := post(t, url, body, tt.headers(s.id, body)); code != s.code {
					t.Fatalf("send %d (%s): answered %d, want %d", i, s.id, code, s.code)
				}
				if s.code == http.StatusAccepted {
					want++
				}
			}
			if p.count() != want {
				t.Fatalf("%d pushes triggered, want %d", p.count(), want)
			}
		})
	}

	t.Run("a refused delivery is not remembered", func(t *testing.T) {
		var p pushes
		url := serve(t, NewReceiver(token, p.onPush, logr.Discard()))
		body := push("a1")
		forged := map[string]string{"X-GitHub-Delivery": "d-1", "X-Hub-Signature-256": "sha256=" + signBody(body, "guess")}
		if code := post(t, url, body, forged); code != http.StatusUnauthorized {
			t.Fatalf("forged delivery answered %d", code)
		}
		if code := post(t, url, body, github("d-1", body)); code != http.StatusAccepted || p.count() != 1 {
			t.Fatalf("genuine delivery after a forged one with its ID: %d, %d pushes", code, p.count())
		}
	})

	t.Run("window and bound", func(t *testing.T) {
		var p pushes
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		rc := NewReceiver(token, p.onPush, logr.Discard())
		rc.ReplayWindow, rc.MaxDeliveries, rc.now = time.Minute, 4, func() time.Time { return now }
		url := serve(t, rc)
		send := func(id, sha string, want int) {
			t.Helper()
			body := push(sha)
			if code := post(t, url, body, gitlab(id, body)); code != want {
				t.Fatalf("%s at %s: answered %d, want %d", id, now.Format(time.TimeOnly), code, want)
			}
		}
		send("u-1", "a1", 202)
		now = now.Add(59 * time.Second)
		send("u-1", "a1", 200)
		now = now.Add(time.Second) // a window after the first
		send("u-1", "a1", 202)
		for i := 2; i <= 5; i++ { // 4 more: u-1 is the oldest, forgotten
			send(fmt.Sprintf("u-%d", i), "a1", 202)
		}
		send("u-5", "a1", 200)
		send("u-1", "a1", 202)
		if p.count() != 7 {
			t.Fatalf("%d pushes triggered, want 7", p.count())
		}
	})
}

// TestReceiverBounds: a body too large is refused with 413, one trickled
// slower than the read timeout with 408; neither triggers anything.
func TestReceiverBounds(t *testing.T) {
	var p pushes
	rc := NewReceiver("s3cret", p.onPush, logr.Discard())
	rc.ReadTimeout = 300 * time.Millisecond
	url := serve(t, rc)

	big := `{"url":"https://git.example/a.git","pad":"` + strings.Repeat("x", MaxPushBody) + `"}`
	if code := post(t, url, big, map[string]string{"X-Driftguard-Token": "s3cret"}); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("large body answered %d, want 413", code)
	}

	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/hook"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /hook HTTP/1.1\r\nHost: x\r\nX-Driftguard-Token: s3cret\r\nContent-Length: 1000\r\n\r\n{\"url\":")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) > 3*time.Second {
		t.Fatalf("trickled body answered %d after %s, want 408 after about %s", resp.StatusCode, time.Since(start), rc.ReadTimeout)
	}
	if p.count() != 0 {
		t.Fatalf("%d pushes triggered, want none", p.count())
	}
}
