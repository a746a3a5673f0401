package certs

import (
	"bytes"
	"testing"
	"time"
)

func TestBundlesTrust(t *testing.T) {
	now := time.Now()
	old, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := newCA(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	both := bytes.Join([][]byte{old.certPEM, cur.certPEM}, nil)
	for _, tc := range []struct {
		name    string
		bundles [][]byte
		want    bool
	}{
		{name: "no webhooks", bundles: nil, want: true},
		{name: "every webhook holds the CA", bundles: [][]byte{cur.certPEM, cur.certPEM}, want: true},
		{name: "a rollover bundle holds the old and the new CA", bundles: [][]byte{both, both}, want: true},
		{name: "one webhook still holds the old CA only", bundles: [][]byte{both, old.certPEM}, want: false},
		{name: "an empty bundle", bundles: [][]byte{cur.certPEM, nil}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bundlesTrust(tc.bundles, cur.cert); got != tc.want {
				t.Fatalf("bundlesTrust = %v, want %v", got, tc.want)
			}
		})
	}
}
