package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/driftguard/driftguard/render"
)

func TestRedactURLs(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"source and guardSpec",
			`{"source":{"url":"https://deploy:s3cret@git.example/infra.git","revision":"abc"},"guardSpec":{"url":"https://ghp_s3cret@git.example/infra.git","git":{"url":"https://u:s3cret@x.example/r?access_token=s3cret"}}}`,
			`{"source":{"url":"https://git.example/infra.git","revision":"abc"},"guardSpec":{"url":"https://git.example/infra.git","git":{"url":"https://x.example/r?access_token=REDACTED"}}}`},
		{"escaped", `{"source":{"url":"https://u:s3cret\u0040git.example/r"}}`, `{"source":{"url":"https://git.example/r"}}`},
		{"space after the colon", `{"url": "https://u:s3cret@git.example/r", "n": 1}`, `{"url": "https://git.example/r", "n": 1}`},
		{"not a string", `{"url":{"x":"https://u:s3cret@git.example"},"y":1}`, `{"url":{"x":"https://u:s3cret@git.example"},"y":1}`},
		{"nothing to take out", `{"source":{"url":"https://git.example/infra.git"},"user":{"username":"alice@example.com"}}`, `{"source":{"url":"https://git.example/infra.git"},"user":{"username":"alice@example.com"}}`},
		{"truncated", `{"url":"https://u:s3cret@git`, `{"url":"https://u:s3cret@git`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(redactURLs(json.RawMessage(tt.in)))
			if got != tt.want {
				t.Fatalf("redactURLs(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
}

// TestLoggerRedactsURLs: whatever the caller puts in a record, no sink
// sees a credential of a URL: not in the source, the reason, the error, or
// the policy input.
func TestLoggerRedactsURLs(t *testing.T) {
	const secretURL = "https://deploy:s3cret@git.example/infra.git?token=s3cret"
	var out bytes.Buffer
	l := NewLogger(logr.Discard(), 10, NewWriterSink("stdout", &out))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	input, err := json.Marshal(map[string]any{
		"source":    map[string]any{"url": secretURL, "revision": "9f2c1e0"},
		"guardSpec": map[string]any{"url": "https://ghp_s3cret@git.example/infra.git"},
	})
	if err != nil {
		t.Fatal(err)
	}
	records := []Record{
		{Type: Decision, Guard: "shop", Action: "deny", Source: SourceOf(render.Source{URL: secretURL, Revision: "9f2c1e0"}), PolicyInput: input,
			Reason: "managed by Git (" + secretURL + ")"},
		{Type: Error, Guard: "shop", Operation: "SYNC", Source: &Source{URL: secretURL},
			Error: `fetch ` + secretURL + `: Get "https://deploy:s3cret@git.example/infra.git/info/refs": connection refused`},
	}
	for _, r := range records {
		l.Log(ctx, r)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Fatalf("a sink got a credential:\n%s", out.String())
	}
	for _, want := range []string{
		`"source":{"url":"https://git.example/infra.git?token=REDACTED","revision":"9f2c1e0"}`,
		`"reason":"managed by Git (https://git.example/infra.git?token=REDACTED)"`,
		`"policyInput":{"guardSpec":{"url":"https://git.example/infra.git"},"source":{"revision":"9f2c1e0","url":"https://git.example/infra.git?token=REDACTED"}}`,
		`"error":"fetch https://git.example/infra.git?token=REDACTED: Get \"https://git.example/infra.git/info/refs\": connection refused"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, out.String())
		}
	}
	// The caller's record is not changed.
	if records[1].Source.URL != secretURL {
		t.Fatalf("Log changed the caller's source: %s", records[1].Source.URL)
	}
}
