package redact

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestRegistryScrubs(t *testing.T) {
	const pw = "s3cr3t-Passw0rd"
	multi := "-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END KEY-----"
	quoted := `pa"ss<w>rd&\x`
	r := &Registry{}
	if !r.Set("shop", []string{pw, multi, quoted, "true", "short"}) {
		t.Fatal("Set refused values within bounds")
	}
	jsonOf := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, tc := range []struct{ name, in, want string }{
		{"raw", "password is " + pw + ".", "password is " + Marker + "."},
		{"twice", pw + pw, Marker + Marker},
		{"base64", "data: " + base64.StdEncoding.EncodeToString([]byte(pw)), "data: " + Marker},
		{"base64 padded", base64.StdEncoding.EncodeToString([]byte(quoted)), Marker + "=="},
		{"base64 url", base64.RawURLEncoding.EncodeToString([]byte(multi)), Marker},
		{"json", `{"v":` + jsonOf(quoted) + `}`, `{"v":"` + Marker + `"}`},
		{"go quoted", fmt.Sprintf("%q", quoted), `"` + Marker + `"`},
		{"one line of a multi-line value", "- MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu", "- " + Marker},
		{"multi-line value escaped", jsonOf(multi), `"` + Marker + `"`},
		{"short values are not looked for", "enabled: true, mode: short", "enabled: true, mode: short"},
		{"prefix only", pw[:10], pw[:10]},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := string(r.Bytes([]byte(tc.in))); got != tc.want {
				t.Errorf("Bytes(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRegistryForgets(t *testing.T) {
	r := &Registry{}
	r.Set("a", []string{"first-revision-secret"})
	r.Set("b", []string{"other-guard-secret"})
	r.Set("a", []string{"second-revision-secret"})
	for _, tc := range []struct {
		in   string
		kept bool
	}{{"first-revision-secret", false}, {"second-revision-secret", true}, {"other-guard-secret", true}} {
		if got := r.String(tc.in) == Marker; got != tc.kept {
			t.Errorf("after a new revision, %q redacted = %v, want %v", tc.in, got, tc.kept)
		}
	}
	r.Forget("a")
	r.Forget("b")
	if r.Active() || r.String("other-guard-secret") != "other-guard-secret" {
		t.Errorf("values kept after every owner was forgotten")
	}
}

func TestRegistryBounds(t *testing.T) {
	r := &Registry{}
	r.Set("g", []string{"kept-from-before"})
	many := make([]string, MaxSecretValues+1)
	for i := range many {
		many[i] = fmt.Sprintf("value-%08d", i)
	}
	if r.Set("g", many) {
		t.Fatalf("Set took %d values, the bound is %d", len(many), MaxSecretValues)
	}
	if r.Set("g", []string{strings.Repeat("x", MaxSecretBytes+1)}) {
		t.Fatalf("Set took more than %d bytes", MaxSecretBytes)
	}
	if r.String("kept-from-before") != Marker {
		t.Errorf("a refused Set dropped the values in force")
	}
}

func TestSensitiveScrub(t *testing.T) {
	var s Sensitive
	s.AddValue(map[string]any{"a": []any{"nested-secret-1", 12345678901, true}, "b": []byte("bytes-secret")})
	if got, want := s.Scrub("x nested-secret-1 12345678901 bytes-secret"), "x "+Marker+" "+Marker+" "+Marker; got != want {
		t.Errorf("Scrub = %q, want %q", got, want)
	}
}

// line is an audit record as the JSON sink writes it, about 1 KB.
var line = []byte(`{"time":"2026-05-06T07:08:09.123456Z","type":"decision","guard":"shop","user":"alice@example.com","groups":["dev","system:authenticated"],"manager":"kubectl","operation":"UPDATE","object":{"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"fields":[{"path":"/spec/replicas","desired":3,"live":5}],"action":"deny","reason":"shop/web is managed by Git; change apps/web/deployment.yaml instead","rule":"data.driftguard.decision","policyRevision":"b41d7aa","source":{"url":"https://git.example/infra.git","revision":"9f2c1e0","path":"apps/web/deployment.yaml","line":1},"requestUID":"3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","policyInput":{"operation":"UPDATE","user":{"username":"alice@example.com","groups":["dev"]},"resource":{"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"drift":[{"path":"/spec/replicas","desired":3,"live":5}]},"durationMs":2.4}` + "\n")

func BenchmarkScrub(b *testing.B) {
	for _, n := range []int{0, 10, 1000} {
		r := &Registry{}
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf("secret-value-%d-of-a-guard", i)
		}
		r.Set("g", vals)
		b.Run(fmt.Sprintf("values=%d/1KiB-record", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if out := r.Bytes(line); len(out) != len(line) {
					b.Fatal("scrubbed a record without secrets")
				}
			}
		})
	}
}
