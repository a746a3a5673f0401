package app

import (
	"strings"
	"testing"
)

// validateNames checks o.Validate: no error when want is "", else an
// error that names want (a flag). It answers the error.
func validateNames(t *testing.T, o *Options, want string) error {
	t.Helper()
	err := o.Validate()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("error %v does not name %s", err, want)
	}
	return err
}
