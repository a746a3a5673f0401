package app

import (
	"reflect"
	"testing"
)

func TestNotifySecrets(t *testing.T) {
	tests := []struct {
		flag string
		want []string
	}{
		{"", nil},
		{"driftguard-notify", []string{"driftguard-notify"}},
		{"team-slack, infra-github", []string{"team-slack", "infra-github"}},
		{"a,,b,", []string{"a", "b"}},
	}
	for _, tt := range tests {
		if got := notifySecrets(tt.flag); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("notifySecrets(%q) = %q, want %q", tt.flag, got, tt.want)
		}
	}
}
