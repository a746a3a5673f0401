package app

import (
	"strings"
	"testing"
)

func TestValidateDefaultServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		account string
		want    string // substring of the error; "" for none
	}{
		{"", ""},
		{"tenant-default", ""},
		{"team.a", ""},
		{"Team_A", "--default-service-account"},
		{"driftguard-system:team-a", "--default-service-account"}, // a name, never a namespace with it
		{"-a", "--default-service-account"},
	} {
		t.Run(tc.account, func(t *testing.T) {
			o := DefaultOptions()
			o.DefaultServiceAccount = tc.account
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v does not name %s", err, tc.want)
			}
		})
	}
}
