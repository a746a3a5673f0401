package reconcile

import (
	"strings"
	"testing"

	"github.com/driftguard/driftguard/render/sopstest"
)

func TestAgeKeys(t *testing.T) {
	k1, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k2, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    map[string][]byte
		want    []string
		wantErr string
	}{
		{"keys ending in .agekey, sorted by key", map[string][]byte{
			"b.agekey": []byte(k2.Identity), "a.agekey": []byte("# created: 2026-01-01\n# public key: " + k1.Recipient + "\n" + k1.Identity + "\n"), "README": []byte("not a key"),
		}, []string{"# created: 2026-01-01\n# public key: " + k1.Recipient + "\n" + k1.Identity + "\n", k2.Identity}, ""},
		{"no age key", map[string][]byte{"identity": []byte(k1.Identity)}, nil, "no key ending in .agekey"},
		{"not a key", map[string][]byte{"x.agekey": []byte("AGE-SECRET-KEY-1SECRETBUTBROKEN")}, nil, "key x.agekey: not an age identity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AgeKeys(tt.data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "SECRETBUTBROKEN") {
					t.Fatalf("error repeats the key: %v", err)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q %v, want %q", got, err, tt.want)
			}
		})
	}
}
