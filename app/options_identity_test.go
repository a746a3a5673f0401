package app

import (
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
			validateNames(t, &o, tc.want)
		})
	}
}
