package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocalCheckoutSymlinks runs validate and diff -f on checkouts whose
// symbolic links lead out of them (to a folder holding a secret) or
// elsewhere in them: every link that the render would follow is an error
// naming the link, and nothing outside the checkout is read (the secret
// appears in no output).
func TestLocalCheckoutSymlinks(t *testing.T) {
	const secret = "hunter2-outside-the-checkout"
	outside := t.TempDir()
	for name, content := range map[string]string{
		"cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaked\ndata:\n  password: " + secret + "\n",
		"values.yaml":  "size: " + secret + "\n",
		".helmignore":  secret + "\n",
		"Chart.yaml":   chartYAML,
		"templates.tp": secret,
	} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chart := map[string]string{"c/Chart.yaml": chartYAML, "c/values.yaml": "size: small\n", "c/templates/cm.yaml": chartTpl}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name     string
		files    map[string]string
		links    map[string]string // link (in the checkout) -> target ("@/" is the outside folder)
		cmd      []string          // "validate"/"diff" and arguments; ROOT is the checkout
		wantCode int
		want     string
	}{
		{"validate: the path goes through a link to a folder outside", nil, map[string]string{"apps": "@"},
			[]string{"validate", "ROOT/apps"}, 1, "apps is a symbolic link to " + outside + ", outside the checkout: not followed"},
		{"validate: the path is a link to a file outside", nil, map[string]string{"app.yaml": "@/cm.yaml"},
			[]string{"validate", "ROOT/app.yaml"}, 1, "app.yaml is a symbolic link to " + outside + "/cm.yaml, outside the checkout"},
		{"validate: a Helm values file is a link outside", chart, map[string]string{"c/prod.yaml": "@/values.yaml"},
			[]string{"validate", "ROOT/c", "--helm-values", "prod.yaml"}, 1, "c/prod.yaml: read: c/prod.yaml is a symbolic link to " + outside + "/values.yaml, outside the checkout"},
		{"validate: a relative link that climbs out", chart, map[string]string{"c/prod.yaml": "../../../../../../../../../../.." + outside + "/values.yaml"},
			[]string{"validate", "ROOT/c", "--helm-values", "prod.yaml"}, 1, "outside the checkout: not followed"},
		{"validate: the chart's .helmignore is a link outside", chart, map[string]string{"c/.helmignore": "@/.helmignore"},
			[]string{"validate", "ROOT/c"}, 1, "c/.helmignore is a symbolic link to " + outside + "/.helmignore, outside the checkout"},
		{"validate: the chart's values.yaml is a link outside: not read", with(chart, "c/values.yaml", ""), map[string]string{"c/values.yaml": "@/values.yaml"},
			[]string{"validate", "ROOT/c"}, 0, "ok: 1 object"},
		{"validate: a kustomization's resource is a link outside", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\n"}, map[string]string{"k/cm.yaml": "@/cm.yaml"},
			[]string{"validate", "ROOT/k"}, 1, "k/kustomization.yaml"},
		{"validate: a link inside the checkout is not followed either", map[string]string{"releases/v2/cm.yaml": validCM}, map[string]string{"current": "releases/v2"},
			[]string{"validate", "ROOT/current"}, 1, "current is a symbolic link to releases/v2: not followed"},
		{"diff -f: a Helm chart's .helmignore is a link outside", chart, map[string]string{"c/.helmignore": "@/.helmignore"},
			[]string{"diff", "-f", "ROOT/c"}, 2, ".helmignore is a symbolic link to " + outside + "/.helmignore, outside the checkout"},
		{"diff -f: a folder of the checkout is a link outside: not read", map[string]string{"k/cm.yaml": validCM}, map[string]string{"k/more": "@"},
			[]string{"diff", "-f", "ROOT/k"}, 2, "no-kubeconfig"}, // rendered, then the cluster is asked
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range tt.files {
				if v != "" {
					files[k] = v
				}
			}
			root := writeRepo(t, files)
			for link, target := range tt.links {
				target = strings.Replace(target, "@", outside, 1)
				full := filepath.Join(root, filepath.FromSlash(link))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, full); err != nil {
					t.Fatal(err)
				}
			}
			args := make([]string, len(tt.cmd))
			for i, a := range tt.cmd {
				args[i] = strings.Replace(a, "ROOT", root, 1)
			}
			cmd := newRootCommand()
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SetArgs(append(args, "--kubeconfig", filepath.Join(root, "no-kubeconfig")))
			if args[0] == "validate" {
				cmd.SetArgs(args) // validate without a cluster
			}
			err := cmd.ExecuteContext(context.Background())
			code := 0
			if ec, ok := err.(exitCode); ok {
				code = int(ec)
			} else if err != nil {
				t.Fatal(err)
			}
			all := out.String() + errOut.String()
			t.Log(all)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(all, tt.want) {
				t.Errorf("output does not say %q", tt.want)
			}
			if strings.Contains(all, secret) {
				t.Errorf("the output holds the secret from outside the checkout")
			}
		})
	}
}
