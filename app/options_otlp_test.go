package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestOTLPFlags: the --audit-otlp-* flags reach the options and Validate
// names the flag at fault, never a header's value.
func TestOTLPFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "headers")
	bad := filepath.Join(dir, "bad-headers")
	if err := os.WriteFile(good, []byte("authorization: Bearer hidden-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("no separator hidden-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // substring of the error; "" for none
	}{
		{"off by default", nil, ""},
		{"grpc with TLS and headers", []string{"--audit-otlp-endpoint=collector.observability:4317", "--audit-otlp-headers-file=" + good}, ""},
		{"http plain on loopback", []string{"--audit-otlp-endpoint=http://127.0.0.1:4318", "--audit-otlp-protocol=http/protobuf", "--audit-otlp-insecure", "--audit-otlp-headers-file=" + good}, ""},
		{"headers in clear", []string{"--audit-otlp-endpoint=collector.observability:4317", "--audit-otlp-insecure", "--audit-otlp-headers-file=" + good}, "--audit-otlp-endpoint"},
		{"bad headers file", []string{"--audit-otlp-endpoint=c:4317", "--audit-otlp-headers-file=" + bad}, "--audit-otlp-headers-file"},
		{"missing headers file", []string{"--audit-otlp-endpoint=c:4317", "--audit-otlp-headers-file=" + filepath.Join(dir, "none")}, "--audit-otlp-headers-file"},
		{"bad protocol", []string{"--audit-otlp-endpoint=c:4317", "--audit-otlp-protocol=thrift"}, "--audit-otlp-endpoint"},
		{"no buffer", []string{"--audit-otlp-endpoint=c:4317", "--audit-otlp-buffer=0"}, "--audit-otlp-buffer"},
		{"no timeout", []string{"--audit-otlp-endpoint=c:4317", "--audit-otlp-timeout=0s"}, "--audit-otlp-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.BindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := validateNames(t, &o, tc.want); err != nil && strings.Contains(err.Error(), "hidden-token") {
				t.Fatalf("the error shows a header value: %v", err)
			}
		})
	}
}
