package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestEndpointFlags: the webhook's limits and client CA flags parse as
// quantities and files, and a bad value is an error naming its flag.
func TestEndpointFlags(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(EndpointOptions) bool
	}{
		{args: nil, check: func(o EndpointOptions) bool {
			return o.WebhookMaxRequestBytes == 7<<20 && o.WebhookMaxBytesInFlight == 32<<20 && !o.MetricsSecure && o.WebhookClientCAFile == ""
		}},
		{args: []string{"--webhook-max-request-bytes=3Mi", "--webhook-max-bytes-in-flight=64Mi", "--metrics-secure"}, check: func(o EndpointOptions) bool {
			return o.WebhookMaxRequestBytes == 3<<20 && o.WebhookMaxBytesInFlight == 64<<20 && o.MetricsSecure
		}},
		{args: []string{"--webhook-max-request-bytes=16Mi", "--webhook-max-bytes-in-flight=8Mi"}, wantErr: "--webhook-max-bytes-in-flight"},
		{args: []string{"--webhook-max-request-bytes=1Gi", "--webhook-max-bytes-in-flight=2Gi"}, wantErr: "--webhook-max-request-bytes"},
		{args: []string{"--webhook-client-names=kube-apiserver"}, wantErr: "--webhook-client-names needs --webhook-client-ca-file"},
		{args: []string{"--webhook-client-ca-file=" + filepath.Join(dir, "missing.pem")}, wantErr: "--webhook-client-ca-file"},
		{args: []string{"--webhook-client-ca-file=" + notPEM}, wantErr: "no PEM certificate"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			o := defaultEndpointOptions()
			fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
			o.bindFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.validate()
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.check != nil && !tc.check(o):
				t.Fatalf("options %+v", o)
			}
		})
	}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o := defaultEndpointOptions()
	o.bindFlags(fs)
	if err := fs.Parse([]string{"--webhook-max-request-bytes=7MB"}); err == nil {
		t.Fatal("7MB is not a quantity of bytes the flag should take") // resource.Quantity: 7M is decimal; MB is not a suffix
	}
}

// TestMetricsOnLoopback: only a loopback (or disabled) metrics address is
// served in plain HTTP without a warning.
func TestMetricsOnLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"0": true, "127.0.0.1:8080": true, "[::1]:8080": true, "localhost:8080": true,
		":8080": false, "0.0.0.0:8080": false, "10.0.0.5:8080": false, "metrics.example:8080": false,
	} {
		if got := metricsOnLoopback(addr); got != want {
			t.Errorf("metricsOnLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
