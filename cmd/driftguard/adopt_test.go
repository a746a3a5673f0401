package main

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftguard/driftguard/gitwrite"
)

func TestParseObjectArg(t *testing.T) {
	tests := []struct {
		arg, kind, name, wantErr string
	}{
		{arg: "deployment/web", kind: "deployment", name: "web"},
		{arg: "deployments.apps/web", kind: "deployments.apps", name: "web"},
		{arg: "cm/a.b-c", kind: "cm", name: "a.b-c"},
		{arg: "web", wantErr: `"web": want KIND/NAME`},
		{arg: "/web", wantErr: "want KIND/NAME"},
		{arg: "deploy/", wantErr: "want KIND/NAME"},
		{arg: "a/b/c", wantErr: "want KIND/NAME"},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			kind, name, err := parseObjectArg(tc.arg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseObjectArg(%q) = %q, %q, %v; want error %q", tc.arg, kind, name, err, tc.wantErr)
				}
				return
			}
			if err != nil || kind != tc.kind || name != tc.name {
				t.Fatalf("parseObjectArg(%q) = %q, %q, %v", tc.arg, kind, name, err)
			}
		})
	}
}

func TestParseAuthor(t *testing.T) {
	tests := []struct {
		in      string
		want    gitwrite.Signature
		wantErr bool
	}{
		{in: "Sam Oncall <sam@example.invalid>", want: gitwrite.Signature{Name: "Sam Oncall", Email: "sam@example.invalid"}},
		{in: "sam@example.invalid", want: gitwrite.Signature{Name: "sam@example.invalid", Email: "sam@example.invalid"}},
		{in: "Sam", wantErr: true},
		{in: "<<", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseAuthor(tc.in)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), `want "Name <email>"`) {
					t.Fatalf("parseAuthor(%q) = %+v, %v; want an error", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseAuthor(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

// TestAdoptAndRollbackArguments: bad arguments fail before the cluster is
// contacted, through the cobra root.
func TestAdoptAndRollbackArguments(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"adopt"}, "accepts 1 arg(s), received 0"},
		{[]string{"adopt", "web"}, `"web": want KIND/NAME`},
		{[]string{"adopt", "deploy/web", "--wait", "soon"}, `invalid argument "soon" for "--wait"`},
		{[]string{"rollback"}, "accepts 1 arg(s), received 0"},
		{[]string{"rollback", "shop"}, "--to REV is required"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("%v: %v\n%s\nwant %q", tc.args, err, out, tc.wantErr)
			}
		})
	}
	out, err := runCLI(t, "--help")
	if err != nil || !strings.Contains(out, "adopt") || !strings.Contains(out, "rollback") {
		t.Fatalf("help lacks adopt and rollback: %v\n%s", err, out)
	}
}

func TestKustomizationAbove(t *testing.T) {
	fsys := fstest.MapFS{
		"apps/base/kustomization.yaml": {Data: []byte("resources: [cm.yaml]")},
		"apps/base/cm.yaml":            {Data: []byte("kind: ConfigMap")},
		"apps/plain/cm.yaml":           {Data: []byte("kind: ConfigMap")},
		"kustomization.yaml":           {Data: []byte("resources: [apps/base]")},
	}
	for _, c := range []struct{ file, root, want string }{
		{"apps/base/cm.yaml", "apps", "apps/base/kustomization.yaml"},
		{"apps/plain/cm.yaml", "apps", ""},
		{"apps/plain/cm.yaml", "", "kustomization.yaml"},
	} {
		if got := kustomizationAbove(fsys, c.file, c.root); got != c.want {
			t.Errorf("kustomizationAbove(%s, %s) = %q, want %q", c.file, c.root, got, c.want)
		}
	}
}
