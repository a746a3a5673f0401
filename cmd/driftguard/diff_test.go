package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const diffDesired = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources: {limits: {cpu: 1}}
`

const diffLiveInSync = `{"apiVersion": "apps/v1", "kind": "Deployment",
 "metadata": {"name": "web", "namespace": "shop", "uid": "1", "resourceVersion": "7", "labels": {"app": "web"}},
 "spec": {"replicas": 3, "revisionHistoryLimit": 10, "template": {"spec": {"containers": [
   {"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "resources": {"limits": {"cpu": "1000m"}}},
   {"name": "istio-proxy", "image": "istio/proxyv2"}]}}},
 "status": {"replicas": 3}}
`

const diffLiveScaled = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  managedFields:
  - manager: kube-controller-manager
    operation: Update
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:replicas: {}}}
spec:
  replicas: 5
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.28
        resources: {limits: {cpu: 1}}
`

const diffSecret = `apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
stringData: {password: hunter2}
`

const diffSecretLive = `apiVersion: v1
kind: Secret
metadata: {name: db, namespace: shop}
data: {password: c3dvcmRmaXNo}
`

func TestDiffCommand(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  []string
		never    []string // must not appear in stdout or stderr
	}{
		{name: "in sync", files: map[string]string{"d.yaml": diffDesired, "l.json": diffLiveInSync},
			args: []string{"--desired", "d.yaml", "--live", "l.json"}, wantOut: []string{"in sync\n"}},
		{name: "drift", files: map[string]string{"d.yaml": diffDesired, "l.yaml": diffLiveScaled},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml"}, wantCode: 1,
			wantOut: []string{"--- git: Deployment shop/web\n+++ live\n", "  /spec/replicas: -3 +5\n",
				`  /spec/template/spec/containers/0/image: -"nginx:1.27" +"nginx:1.28"` + "\n", "2 fields differ\n"}},
		{name: "missing field", files: map[string]string{"d.yaml": diffDesired, "l.yaml": strings.Replace(diffLiveScaled, "labels: {app: web}", "labels: {}", 1)},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml"}, wantCode: 1,
			wantOut: []string{`  /metadata/labels/app: -"web" +(missing)` + "\n"}},
		{name: "drift hidden by ignore rules", files: map[string]string{"d.yaml": diffDesired, "l.yaml": diffLiveScaled, "r.yaml": `
- kind: Deployment
  managedFieldsManagers: [kube-controller-manager]
- name: web
  jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "web") | .image']
- kind: StatefulSet
  jsonPointers: [/metadata/labels]
`},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml", "--ignore", "r.yaml"}, wantOut: []string{"in sync\n"}},
		{name: "one rule hides one field", files: map[string]string{"d.yaml": diffDesired, "l.yaml": diffLiveScaled, "r.yaml": "- jsonPointers: [/spec/replicas]\n"},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml", "--ignore", "r.yaml"}, wantCode: 1,
			wantOut: []string{"/spec/template/spec/containers/0/image", "1 field differs\n"}, never: []string{"/spec/replicas"}},
		{name: "jq runtime error is a warning", files: map[string]string{"d.yaml": diffDesired, "l.json": diffLiveInSync, "r.yaml": "- jqPathExpressions: ['.spec.template.spec.initContainers[]']\n"},
			args: []string{"--desired", "d.yaml", "--live", "l.json", "--ignore", "r.yaml"}, wantOut: []string{"in sync\n"},
			wantErr: []string{`warning: r.yaml: ignore[0].jqPathExpressions[0] ".spec.template.spec.initContainers[]": cannot iterate over: null (hides nothing)`}},
		{name: "bad rule", files: map[string]string{"d.yaml": diffDesired, "l.yaml": diffLiveScaled, "r.yaml": "- jsonPointers: [/spec/replicas]\n- jqPathExpressions: ['.spec[']\n"},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml", "--ignore", "r.yaml"}, wantCode: 2,
			wantErr: []string{`r.yaml: ignore[1].jqPathExpressions[0] ".spec[": unexpected EOF`}, never: []string{"fields differ"}},
		{name: "unknown rule field", files: map[string]string{"d.yaml": diffDesired, "l.yaml": diffLiveScaled, "r.yaml": "- jsonPointer: [/spec/replicas]\n"},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml", "--ignore", "r.yaml"}, wantCode: 2,
			wantErr: []string{"r.yaml", `unknown field "jsonPointer"`}},
		{name: "Secret values are redacted", files: map[string]string{"d.yaml": diffSecret, "l.yaml": diffSecretLive},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml"}, wantCode: 1,
			wantOut: []string{"--- git: Secret shop/db\n", `  /data/password: -"sha256:`, "1 field differs\n"},
			never:   []string{"hunter2", "aHVudGVyMg==", "c3dvcmRmaXNo", "swordfish"}},
		{name: "broken YAML names file and line", files: map[string]string{"d.yaml": "kind: Deployment\nmetadata:\n  name: [web\n", "l.yaml": diffLiveScaled},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml"}, wantCode: 2, wantErr: []string{"d.yaml: yaml: line"}},
		{name: "several objects", files: map[string]string{"d.yaml": diffDesired + "---\n" + diffDesired, "l.yaml": diffLiveScaled},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml"}, wantCode: 2, wantErr: []string{"d.yaml: holds 2 objects"}},
		{name: "not the same object", files: map[string]string{"d.yaml": diffDesired, "l.yaml": diffSecretLive},
			args: []string{"--desired", "d.yaml", "--live", "l.yaml"}, wantCode: 2, wantErr: []string{"d.yaml holds Deployment shop/web but l.yaml holds Secret shop/db"}},
		{name: "missing file", files: map[string]string{"d.yaml": diffDesired},
			args: []string{"--desired", "d.yaml", "--live", "nope.yaml"}, wantCode: 2, wantErr: []string{"nope.yaml"}},
		{name: "flags required", args: []string{"--desired", "d.yaml"}, wantCode: 2, wantErr: []string{"--desired and --live are required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string(nil), tt.args...)
			for i := 1; i < len(args); i += 2 {
				args[i] = filepath.Join(dir, args[i])
			}
			var stdout, stderr bytes.Buffer
			cmd := newDiffCommand()
			cmd.SetArgs(args)
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			err := cmd.Execute()
			code := 0
			var ec exitCode
			switch {
			case errors.As(err, &ec):
				code = int(ec)
			case err != nil:
				t.Fatalf("Execute: %v", err)
			}
			// Messages name files as given; compare with the base names.
			out, errOut := stdout.String(), strings.ReplaceAll(stderr.String(), dir+string(filepath.Separator), "")
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(out+errOut, n) {
					t.Errorf("output contains %q:\n%s%s", n, out, errOut)
				}
			}
		})
	}
}
