package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/health"
)

// got is what a loopback receiver took: each accepted request as a line,
// and each refusal with why.
type got struct {
	mu       sync.Mutex
	accepted []string
	refused  []string
}

func (g *got) add(ok bool, s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ok {
		g.accepted = append(g.accepted, s)
	} else {
		g.refused = append(g.refused, s)
	}
}

func (g *got) lists() ([]string, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.accepted...), append([]string(nil), g.refused...)
}

// check reads a JSON body into v; it refuses (400) what is not JSON.
func check(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(r.Body)
	if err != nil || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

var (
	t0       = time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	cmObject = audit.Object{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}
	revA     = strings.Repeat("a", 40)
	revB     = strings.Repeat("b", 40)
)

// chatRecords: one of each kind that notifies, and routine records that
// must not (a successful sync above all).
func chatRecords(src string) []audit.Record {
	s := &audit.Source{URL: src, Revision: revA, Path: "cfg.yaml", Line: 3}
	return []audit.Record{
		{Time: t0, Type: audit.Apply, Guard: "shop", Operation: "SYNC", Action: "applied", Source: s},
		{Time: t0, Type: audit.Apply, Guard: "shop", Operation: "APPLY", Action: "configured", Object: cmObject, Source: s},
		{Time: t0, Type: audit.Drift, Guard: "shop", User: "<!channel> [x](https://evil.example)", Object: cmObject, Action: "revert", Source: s,
			Fields: []audit.Field{{Path: "/data/value", Desired: "git", Live: "by alice"}}},
		{Time: t0, Type: audit.Error, Guard: "shop", Operation: "SYNC", Reason: v1alpha1.ReasonApplyFailed, Error: "apply ConfigMap shop/cfg: forbidden", Source: s},
		{Time: t0, Type: audit.Health, Guard: "shop", Action: string(health.Degraded), Reason: "Deployment shop/web: progress deadline exceeded"},
		{Time: t0, Type: audit.Revert, Guard: "shop", Object: cmObject},
	}
}

// slackReceiver checks an incoming-webhook message as Slack documents it:
// text, and blocks of types header (plain_text, at most 150 characters),
// section (mrkdwn text of at most 3000, or at most 10 fields of at most
// 2000) and context (elements).
func slackReceiver(g *got) http.HandlerFunc {
	type text struct {
		Type  string `json:"type"`
		Text  string `json:"text"`
		Emoji *bool  `json:"emoji,omitempty"`
	}
	return func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Text   string `json:"text"`
			Blocks []struct {
				Type     string `json:"type"`
				Text     *text  `json:"text"`
				Fields   []text `json:"fields"`
				Elements []text `json:"elements"`
			} `json:"blocks"`
		}
		if r.Method != http.MethodPost || !check(w, r, &msg) {
			g.add(false, "method or body")
			return
		}
		bad := func(why string) { g.add(false, why); http.Error(w, why, http.StatusBadRequest) }
		if msg.Text == "" || len(msg.Blocks) == 0 {
			bad("no text or no blocks")
			return
		}
		var parts []string
		for _, b := range msg.Blocks {
			switch {
			case b.Type == "header" && b.Text != nil && b.Text.Type == "plain_text" && len(b.Text.Text) <= 150:
				parts = append(parts, b.Text.Text)
			case b.Type == "section" && b.Text != nil && b.Text.Type == "mrkdwn" && len(b.Text.Text) <= 3000 && b.Fields == nil:
				parts = append(parts, b.Text.Text)
			case b.Type == "section" && b.Text == nil && len(b.Fields) > 0 && len(b.Fields) <= 10:
				for _, f := range b.Fields {
					if f.Type != "mrkdwn" || len(f.Text) > 2000 {
						bad("field " + f.Type)
						return
					}
					parts = append(parts, f.Text)
				}
			case b.Type == "context" && len(b.Elements) > 0:
				for _, e := range b.Elements {
					parts = append(parts, e.Text)
				}
			default:
				bad("block " + b.Type)
				return
			}
		}
		g.add(true, strings.Join(parts, " | "))
	}
}

// teamsReceiver checks a Teams message with one Adaptive Card attachment.
func teamsReceiver(g *got) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Type        string `json:"type"`
			Attachments []struct {
				ContentType string  `json:"contentType"`
				ContentURL  *string `json:"contentUrl"`
				Content     struct {
					Schema  string `json:"$schema"`
					Type    string `json:"type"`
					Version string `json:"version"`
					Body    []struct {
						Type   string `json:"type"`
						Text   string `json:"text"`
						Weight string `json:"weight"`
						Size   string `json:"size"`
						Wrap   bool   `json:"wrap"`
						Facts  []struct {
							Title string `json:"title"`
							Value string `json:"value"`
						} `json:"facts"`
					} `json:"body"`
				} `json:"content"`
			} `json:"attachments"`
		}
		if r.Method != http.MethodPost || !check(w, r, &msg) {
			g.add(false, "method or body")
			return
		}
		bad := func(why string) { g.add(false, why); http.Error(w, why, http.StatusBadRequest) }
		if msg.Type != "message" || len(msg.Attachments) != 1 {
			bad("not a message with one attachment")
			return
		}
		a := msg.Attachments[0]
		if a.ContentType != "application/vnd.microsoft.card.adaptive" || a.Content.Type != "AdaptiveCard" || a.Content.Version == "" ||
			a.Content.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" || len(a.Content.Body) == 0 {
			bad("not an Adaptive Card")
			return
		}
		var parts []string
		for _, e := range a.Content.Body {
			switch {
			case e.Type == "TextBlock" && e.Text != "" && e.Facts == nil:
				parts = append(parts, e.Text)
			case e.Type == "FactSet" && len(e.Facts) > 0 && e.Text == "":
				for _, f := range e.Facts {
					parts = append(parts, f.Title+"="+f.Value)
				}
			default:
				bad("element " + e.Type)
				return
			}
		}
		g.add(true, strings.Join(parts, " | "))
	}
}

func TestChatProviders(t *testing.T) {
	tests := []struct {
		provider string
		receiver func(*got) http.HandlerFunc
		want     []string // each accepted message holds these, in order of the records
		never    []string // no message holds these
	}{
		{Slack, slackReceiver, []string{"Drift from Git (shop)", "Sync failed (shop)", "Guard degraded (shop)"},
			[]string{"<!channel>", "<https://"}},
		{Teams, teamsReceiver, []string{"Drift from Git (shop)", "Sync failed (shop)", "Guard degraded (shop)"},
			[]string{"](https://evil"}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			g := &got{}
			srv := httptest.NewServer(tt.receiver(g))
			defer srv.Close()
			s := &Sink{Config: func(context.Context) (Config, error) {
				return ConfigFrom(map[string][]byte{"provider": []byte(tt.provider), "address": []byte(srv.URL + "/hook/SECRET")})
			}, Log: logr.Discard()}
			if err := s.Write(context.Background(), chatRecords("https://github.com/org/infra.git")); err != nil {
				t.Fatal(err)
			}
			accepted, refused := g.lists()
			if len(refused) > 0 {
				t.Fatalf("the receiver refused %v", refused)
			}
			if len(accepted) != len(tt.want) {
				t.Fatalf("got %d messages, want %d (routine syncs, applies and reverts notify nobody): %q", len(accepted), len(tt.want), accepted)
			}
			for i, w := range tt.want {
				if !strings.Contains(accepted[i], w) {
					t.Errorf("message %d %q lacks %q", i, accepted[i], w)
				}
				for _, n := range tt.never {
					if strings.Contains(accepted[i], n) {
						t.Errorf("message %d holds %q, which a writer chose: %q", i, n, accepted[i])
					}
				}
			}
			if !strings.Contains(accepted[0], "/data/value") || !strings.Contains(accepted[0], revA) || !strings.Contains(accepted[0], "cfg.yaml:3") {
				t.Errorf("drift message lacks the field, revision or file: %q", accepted[0])
			}
		})
	}
}

// hmacReceiver verifies X-Driftguard-Signature as docs/reconciliation.md
// tells a receiver to: HMAC-SHA256 of the raw body under the shared key,
// compared in constant time.
func hmacReceiver(g *got, key string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sig, ok := strings.CutPrefix(r.Header.Get("X-Driftguard-Signature"), "sha256=")
		got, err := hex.DecodeString(sig)
		m := hmac.New(sha256.New, []byte(key))
		m.Write(body)
		if !ok || err != nil || !hmac.Equal(got, m.Sum(nil)) {
			g.add(false, "signature")
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var n Notification
		if err := json.Unmarshal(body, &n); err != nil || n.Kind == "" {
			g.add(false, "body")
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		g.add(true, n.Guard+"/"+n.Kind)
	}
}

func TestGenericSigned(t *testing.T) {
	tests := []struct {
		name      string
		key       string // in the guard's Secret
		accepted  int
		refused   int
		logFailed bool
	}{
		{"signed with the receiver's key", "s3cret-key", 3, 0, false},
		{"signed with another key", "other-key", 0, 3, true},
		{"not signed", "", 0, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &got{}
			srv := httptest.NewServer(hmacReceiver(g, "s3cret-key"))
			defer srv.Close()
			var mu sync.Mutex
			var logged []string
			log := funcr.New(func(_, args string) { mu.Lock(); logged = append(logged, args); mu.Unlock() }, funcr.Options{})
			s := &Sink{Config: func(context.Context) (Config, error) {
				return ConfigFrom(map[string][]byte{"address": []byte(srv.URL), "hmacKey": []byte(tt.key)})
			}, Log: log}
			if err := s.Write(context.Background(), chatRecords("https://github.com/org/infra.git")); err != nil {
				t.Fatal(err)
			}
			accepted, refused := g.lists()
			if len(accepted) != tt.accepted || len(refused) != tt.refused {
				t.Fatalf("accepted %v, refused %v; want %d and %d", accepted, refused, tt.accepted, tt.refused)
			}
			mu.Lock()
			defer mu.Unlock()
			all := strings.Join(logged, "\n")
			if (len(logged) > 0) != tt.logFailed || strings.Contains(all, "other-key") || strings.Contains(all, "s3cret") {
				t.Fatalf("log %q", all)
			}
		})
	}
}

// statusAPI serves GitHub's and GitLab's commit-status routes on loopback
// and checks what each takes.
func statusAPI(g *got, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/repos/{owner}/{repo}/statuses/{sha}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			State       string `json:"state"`
			Context     string `json:"context"`
			Description string `json:"description"`
			TargetURL   string `json:"target_url"`
		}
		if r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("Accept") != "application/vnd.github+json" {
			g.add(false, "github auth")
			http.Error(w, "Bad credentials", http.StatusUnauthorized)
			return
		}
		if !check(w, r, &body) {
			g.add(false, "github body")
			return
		}
		switch body.State {
		case "error", "failure", "pending", "success":
		default:
			g.add(false, "github state "+body.State)
			http.Error(w, "Validation Failed", http.StatusUnprocessableEntity)
			return
		}
		if body.Context == "" || len(body.Description) > 140 || !commitSHA.MatchString(r.PathValue("sha")) {
			g.add(false, "github fields")
			http.Error(w, "Validation Failed", http.StatusUnprocessableEntity)
			return
		}
		g.add(true, fmt.Sprintf("github %s/%s@%s %s %s %q %s", r.PathValue("owner"), r.PathValue("repo"), r.PathValue("sha")[:1], body.State, body.Context, body.Description, body.TargetURL))
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("POST /api/v4/projects/{id}/statuses/{sha}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			State       string `json:"state"`
			Name        string `json:"name"`
			Description string `json:"description"`
			TargetURL   string `json:"target_url"`
		}
		if r.Header.Get("PRIVATE-TOKEN") != token {
			g.add(false, "gitlab auth")
			http.Error(w, `{"message":"401 Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		if !check(w, r, &body) {
			g.add(false, "gitlab body")
			return
		}
		switch body.State {
		case "pending", "running", "success", "failed", "canceled":
		default:
			g.add(false, "gitlab state "+body.State)
			http.Error(w, "state does not have a valid value", http.StatusBadRequest)
			return
		}
		// The id is the project's path URL-encoded whole: one segment.
		if body.Name == "" || !strings.Contains(r.URL.EscapedPath(), "%2F") {
			g.add(false, "gitlab fields "+r.URL.EscapedPath())
			http.Error(w, "400", http.StatusBadRequest)
			return
		}
		g.add(true, fmt.Sprintf("gitlab %s@%s %s %s %q", r.PathValue("id"), r.PathValue("sha")[:1], body.State, body.Name, body.Description))
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		g.add(false, "no route "+r.Method+" "+r.URL.EscapedPath())
		http.NotFound(w, r)
	})
	return mux
}

// statusRecords: a revision that fails twice then is applied, applied
// again (no change), another that does not render, a fetch failure, an OCI
// digest, and a chat-only record.
func statusRecords(repo string) []audit.Record {
	src := func(rev string) *audit.Source { return &audit.Source{URL: repo, Revision: rev} }
	return []audit.Record{
		{Time: t0, Type: audit.Error, Guard: "shop", Operation: "SYNC", Reason: v1alpha1.ReasonApplyFailed, Error: "apply x: forbidden by secret-ish detail", Source: src(revA)},
		{Time: t0, Type: audit.Error, Guard: "shop", Operation: "SYNC", Reason: v1alpha1.ReasonApplyFailed, Error: "again", Source: src(revA)},
		{Time: t0, Type: audit.Apply, Guard: "shop", Operation: "APPLY", Action: "configured", Object: cmObject, Source: src(revA)},
		{Time: t0, Type: audit.Apply, Guard: "shop", Operation: "SYNC", Action: "applied", Source: src(revA)},
		{Time: t0, Type: audit.Apply, Guard: "shop", Operation: "SYNC", Action: "applied", Source: src(revA)},
		{Time: t0, Type: audit.Error, Guard: "shop", Operation: "RENDER", Error: "b.yaml:3: bad", Source: src(revB)},
		{Time: t0, Type: audit.Error, Guard: "shop", Operation: "SYNC", Reason: v1alpha1.ReasonFetchFailed, Source: src(revB)},
		{Time: t0, Type: audit.Apply, Guard: "shop", Operation: "SYNC", Action: "applied", Source: src("sha256:" + strings.Repeat("c", 64))},
		{Time: t0, Type: audit.Drift, Guard: "shop", Object: cmObject, Source: src(revA)},
	}
}

func TestCommitStatus(t *testing.T) {
	g := &got{}
	srv := httptest.NewServer(statusAPI(g, "tok-SECRET"))
	defer srv.Close()
	tests := []struct {
		name     string
		provider string
		api      string
		repo     string
		want     []string
	}{
		{"github, https URL", GitHub, "/api/v3", "https://127.0.0.1/org/infra.git", []string{
			`github org/infra@a failure driftguard/shop "revision failed on guard shop: ApplyFailed" https://ci.example/shop/` + revA,
			`github org/infra@a success driftguard/shop "revision applied by guard shop" https://ci.example/shop/` + revA,
			`github org/infra@b failure driftguard/shop "revision failed on guard shop: RenderFailed" https://ci.example/shop/` + revB,
		}},
		{"github, scp-like URL as the audit log keeps it", GitHub, "/api/v3", "127.0.0.1:org/infra.git", []string{
			`github org/infra@a failure`, `github org/infra@a success`, `github org/infra@b failure`,
		}},
		{"gitlab, ssh URL with a subgroup", GitLab, "/api/v4", "ssh://git@127.0.0.1:2222/group/sub/infra.git", []string{
			`gitlab group/sub/infra@a failed driftguard/shop "revision failed on guard shop: ApplyFailed"`,
			`gitlab group/sub/infra@a success driftguard/shop`,
			`gitlab group/sub/infra@b failed`,
		}},
		{"a repository on another host gets no status", GitHub, "/api/v3", "https://github.com/org/infra.git", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g.mu.Lock()
			g.accepted, g.refused = nil, nil
			g.mu.Unlock()
			var mu sync.Mutex
			var logged []string
			log := funcr.New(func(_, args string) { mu.Lock(); logged = append(logged, args); mu.Unlock() }, funcr.Options{})
			s := &Sink{Config: func(context.Context) (Config, error) {
				return ConfigFrom(map[string][]byte{"provider": []byte(tt.provider), "token": []byte("tok-SECRET"),
					"apiURL": []byte(srv.URL + tt.api), "targetURL": []byte("https://ci.example/{guard}/{revision}")})
			}, Log: log}
			if err := s.Write(context.Background(), statusRecords(tt.repo)); err != nil {
				t.Fatal(err)
			}
			accepted, refused := g.lists()
			if len(refused) > 0 {
				t.Fatalf("the API refused: %v", refused)
			}
			if len(accepted) != len(tt.want) {
				t.Fatalf("statuses %q, want %d", accepted, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(accepted[i], w) {
					t.Errorf("status %d: %q, want %q", i, accepted[i], w)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all := strings.Join(logged, "\n")
			if strings.Contains(all, "SECRET") || strings.Contains(strings.Join(accepted, " "), "secret-ish") {
				t.Fatalf("a secret or an error text left: log %q", all)
			}
			if tt.want == nil && !strings.Contains(all, "not the provider's Git host") {
				t.Fatalf("log %q, want the host refused", all)
			}
		})
	}
}

// TestCommitStatusBadToken: a status the API refuses is logged without the
// token, and set again by the next record of that revision and result.
func TestCommitStatusBadToken(t *testing.T) {
	g := &got{}
	srv := httptest.NewServer(statusAPI(g, "right-token"))
	defer srv.Close()
	var logged []string
	var mu sync.Mutex
	log := funcr.New(func(_, args string) { mu.Lock(); logged = append(logged, args); mu.Unlock() }, funcr.Options{})
	token := "wrong-SECRET"
	s := &Sink{Config: func(context.Context) (Config, error) {
		return ConfigFrom(map[string][]byte{"provider": []byte("gitlab"), "token": []byte(token), "apiURL": []byte(srv.URL + "/api/v4")})
	}, Log: log}
	rec := audit.Record{Time: t0, Type: audit.Apply, Guard: "shop", Operation: "SYNC", Action: "applied", Source: &audit.Source{URL: "http://127.0.0.1/g/r", Revision: revA}}
	_ = s.Write(context.Background(), []audit.Record{rec})
	token = "right-token"
	_ = s.Write(context.Background(), []audit.Record{rec, rec})
	accepted, refused := g.lists()
	if len(refused) != 1 || len(accepted) != 1 {
		t.Fatalf("accepted %v, refused %v; want one of each", accepted, refused)
	}
	mu.Lock()
	defer mu.Unlock()
	if all := strings.Join(logged, "\n"); len(logged) != 1 || strings.Contains(all, "SECRET") || !strings.Contains(all, "401") {
		t.Fatalf("log %q", all)
	}
}

func TestParseRepository(t *testing.T) {
	tests := []struct {
		url, host, path string
	}{
		{"https://github.com/org/infra.git", "github.com", "org/infra"},
		{"https://GitHub.com/org/infra/", "github.com", "org/infra"},
		{"http://127.0.0.1:8080/org/infra", "127.0.0.1", "org/infra"},
		{"ssh://git@gitlab.example:2222/group/sub/infra.git", "gitlab.example", "group/sub/infra"},
		{"git@github.com:org/infra.git", "github.com", "org/infra"},
		{"github.com:org/infra.git", "github.com", "org/infra"},
		{"https://github.com/infra.git", "", ""},
		{"https://github.com/org/../infra", "", ""},
		{"oci://registry.example/org/chart", "", ""},
		{"file:///srv/git/org/infra", "", ""},
		{"/srv/git/org/infra", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			r, err := ParseRepository(tt.url)
			if (err != nil) != (tt.host == "") || r.Host != tt.host || r.Path != tt.path {
				t.Fatalf("ParseRepository = %+v, %v; want %s %s", r, err, tt.host, tt.path)
			}
		})
	}
}

func TestConfigFrom(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string]string
		want    string // provider, API URL, Git host
		errorIs string
	}{
		{"address only is generic", map[string]string{"address": "https://hooks.example/x"}, "generic", ""},
		{"slack", map[string]string{"provider": "Slack", "address": "https://hooks.slack.com/services/x"}, "slack", ""},
		{"slack without address", map[string]string{"provider": "slack"}, "", `key "address"`},
		{"github.com", map[string]string{"provider": "github", "token": "t"}, "github https://api.github.com github.com", ""},
		{"github enterprise", map[string]string{"provider": "github", "token": "t", "apiURL": "https://ghe.example/api/v3/"}, "github https://ghe.example/api/v3 ghe.example", ""},
		{"github api. host", map[string]string{"provider": "github", "token": "t", "apiURL": "https://api.github.com"}, "github https://api.github.com github.com", ""},
		{"gitlab.com", map[string]string{"provider": "gitlab", "token": "t"}, "gitlab https://gitlab.com/api/v4 gitlab.com", ""},
		{"gitlab git host", map[string]string{"provider": "gitlab", "token": "t", "apiURL": "https://api.gl.example/api/v4", "gitHost": "git.gl.example"}, "gitlab https://api.gl.example/api/v4 git.gl.example", ""},
		{"github without token", map[string]string{"provider": "github"}, "", `key "token"`},
		{"api URL not http", map[string]string{"provider": "gitlab", "token": "t", "apiURL": "ftp://x"}, "", `key "apiURL"`},
		{"unknown provider", map[string]string{"provider": "pagerduty", "address": "x"}, "", "unknown provider"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range tt.data {
				data[k] = []byte(v)
			}
			c, err := ConfigFrom(data)
			if tt.errorIs != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errorIs) {
					t.Fatalf("err %v, want %q", err, tt.errorIs)
				}
				return
			}
			got := c.Provider
			if c.commitStatus() {
				got += " " + c.apiURL() + " " + c.gitHost()
			}
			if err != nil || got != tt.want {
				t.Fatalf("%q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
