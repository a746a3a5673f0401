package app

import (
	"testing"
	"time"
)

func TestValidateInstallOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string // substring of the error; "" for none
	}{
		{"defaults", func(*Options) {}, ""},
		{"TLS 1.2", func(o *Options) { o.TLSMinVersion = "1.2" }, ""},
		{"TLS 1.1", func(o *Options) { o.TLSMinVersion = "1.1" }, "--tls-min-version"},
		{"cert dir and secret", func(o *Options) { o.CertDir, o.CertSecret = "/certs", "tls" }, "--cert-dir and --cert-secret"},
		{"CA shorter than certificate", func(o *Options) { o.CertSecret, o.CALifetime, o.CertLifetime = "tls", time.Hour, 2*time.Hour }, "--ca-lifetime"},
		{"short leases", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
		}, ""},
		{"renew deadline past the lease", func(o *Options) { o.LeaseDuration, o.RenewDeadline = 4*time.Second, 5*time.Second }, "--leader-elect-lease-duration"},
		{"retry as long as the renew deadline", func(o *Options) { o.RenewDeadline, o.RetryPeriod = 2*time.Second, 2*time.Second }, "--leader-elect-retry-period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mod(&o)
			validateNames(t, &o, tc.want)
		})
	}
}
