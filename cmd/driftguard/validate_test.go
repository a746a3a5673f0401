package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/config"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/render/sopstest"
)

// writeRepo writes files into a new Git checkout (a folder with .git) and
// returns its root.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runValidateCmd runs "driftguard validate args..." and returns stdout,
// stderr and the exit code.
func runValidateCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"validate"}, args...))
	err := cmd.ExecuteContext(context.Background())
	code := 0
	var ec exitCode
	switch {
	case errors.As(err, &ec):
		code = int(ec)
	case err != nil:
		t.Fatalf("Execute: %v", err)
	}
	return out.String(), errOut.String(), code
}

const (
	validCM   = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: shop\ndata:\n  env: ${ENV:=dev}\n"
	chartYAML = "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	chartTpl  = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cfg\ndata:\n  size: {{ .Values.size | quote }}\n"
)

func TestValidateCommand(t *testing.T) {
	key, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: shop\nstringData:\n  password: hunter2\n"),
		sopstest.Options{EncryptedRegex: "^stringData$"}, key.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(keyFile, []byte("# created by age-keygen\n"+key.Identity+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	varsFile := filepath.Join(t.TempDir(), "vars.yaml")
	if err := os.WriteFile(varsFile, []byte("ENV: prod\nREPLICAS: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		files    map[string]string
		path     string // relative to the repository root
		args     []string
		wantCode int
		wantOut  []string
		never    []string
	}{
		{name: "plain YAML is fine", files: map[string]string{"apps/cm.yaml": validCM}, path: "apps",
			wantOut: []string{"ok: 1 object in "}},
		{name: "every problem with file and line", files: map[string]string{
			"apps/a.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: [x\n",
			"apps/b.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-${CLUSTER}\n",
			"apps/c.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n",
			"apps/d.yaml":   "# again\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\n",
			"apps/e.yaml":   "apiVersion: v1\nmetadata:\n  name: nokind\n",
			"apps/ok.yaml":  validCM,
			"apps/README":   "not a manifest",
			"other/x.yaml":  "not: [read",
			"apps/f/g.json": "{\"apiVersion\": \"v1\",\n \"kind\": \"ConfigMap\",\n \"metadata\": {\"name\": \"${MISSING}\"}}",
		}, path: "apps", args: []string{"--vars", "ENV=prod"}, wantCode: 1, wantOut: []string{
			"apps/a.yaml:5: did not find expected ',' or ']'\n",
			"apps/b.yaml:1: ConfigMap b-${CLUSTER}: variable \"CLUSTER\" is not set and has no default\n",
			"apps/e.yaml:1: object lacks kind\n",
			"apps/f/g.json:1: ConfigMap ${MISSING}: variable \"MISSING\" is not set and has no default\n",
			"apps/d.yaml:2: duplicate object /ConfigMap//same, first defined at apps/c.yaml:1\n",
			"5 problems in ",
		}, never: []string{"other/x.yaml"}},
		{name: "sync waves and hooks the guard cannot read", files: map[string]string{
			"apps/a.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: shop\n  annotations:\n    driftguard.io/sync-wave: first\n",
			"apps/b.yaml":  "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  namespace: shop\n  annotations:\n    helm.sh/hook: pre-instal\n",
			"apps/c.yaml":  "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: run-\n  namespace: shop\n",
			"apps/ok.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: seed-\n  namespace: shop\n  annotations:\n    argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/sync-wave: \"-2\"\n",
		}, path: "apps", wantCode: 1, wantOut: []string{
			"apps/a.yaml:1: ConfigMap shop/a: annotation driftguard.io/sync-wave: \"first\" is not an integer",
			"apps/b.yaml:1: Job shop/migrate-: annotation helm.sh/hook: \"pre-instal\" is not a hook event",
			"apps/c.yaml:1: Job shop/run-: metadata.generateName without metadata.name is only for hooks",
			"3 problems in ",
		}, never: []string{"apps/ok.yaml"}},
		{name: "without vars nothing is substituted", files: map[string]string{"apps/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-${CLUSTER}\n"}, path: "apps",
			wantOut: []string{"ok: 1 object"}},
		{name: "vars file and vars flag", files: map[string]string{"apps/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-${ENV}-${REPLICAS}-${ZONE}\n"}, path: "apps",
			args: []string{"--vars-file", varsFile, "--vars", "ZONE=a"}, wantOut: []string{"ok: 1 object"}},
		{name: "kustomize overlay reaching a base", files: map[string]string{
			"base/kustomization.yaml":    "resources: [cm.yaml]\n",
			"base/cm.yaml":               validCM,
			"overlay/kustomization.yaml": "resources: [../base]\nnamePrefix: prod-\n",
		}, path: "overlay", wantOut: []string{"ok: 1 object in "}},
		{name: "broken kustomization", files: map[string]string{
			"overlay/kustomization.yaml": "resources: [../nope]\n",
		}, path: "overlay", wantCode: 1, wantOut: []string{"overlay/kustomization.yaml: kustomize build overlay: ", "1 problem in "}},
		{name: "helm chart with values", files: map[string]string{
			"chart/Chart.yaml":            chartYAML,
			"chart/values.yaml":           "size: 1\n",
			"chart/values-prod.yaml":      "size: 9\n",
			"chart/templates/cfg.yaml":    chartTpl,
			"chart/templates/broken.yaml": "{{ if .Values.broken }}{{ fail \"broken is set\" }}{{ end }}\n",
		}, path: "chart", args: []string{"--helm-values", "values-prod.yaml", "--release-name", "shop"}, wantOut: []string{"ok: 1 object"}},
		{name: "failing helm template", files: map[string]string{
			"chart/Chart.yaml":            chartYAML,
			"chart/templates/broken.yaml": "\n{{ fail \"size must be set\" }}\n",
		}, path: "chart", wantCode: 1, wantOut: []string{"chart/templates/broken.yaml:2: helm template: execution error at (web/templates/broken.yaml:2:3): size must be set\n"}},
		{name: "SOPS file decrypted with a key file", files: map[string]string{"apps/secret.yaml": string(secret)}, path: "apps",
			args: []string{"--age-key-file", keyFile}, wantOut: []string{"ok: 1 object"}, never: []string{"hunter2"}},
		{name: "SOPS file without a key", files: map[string]string{"apps/secret.yaml": string(secret)}, path: "apps",
			wantCode: 1, wantOut: []string{"apps/secret.yaml: the file is SOPS-encrypted and no age key is given (spec.decryption)\n"}, never: []string{"hunter2"}},
		{name: "a single file", files: map[string]string{"apps/cm.yaml": validCM}, path: "apps/cm.yaml", wantOut: []string{"ok: 1 object"}},
		{name: "bad --vars", files: map[string]string{"apps/cm.yaml": validCM}, path: "apps", args: []string{"--vars", "novalue"}, wantCode: 2},
		{name: "bad variable name", files: map[string]string{"apps/cm.yaml": validCM}, path: "apps", args: []string{"--vars", "my-var=1"}, wantCode: 2},
		{name: "missing path", files: map[string]string{"apps/cm.yaml": validCM}, path: "nope", wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeRepo(t, tt.files)
			out, errOut, code := runValidateCmd(t, append([]string{filepath.Join(root, tt.path)}, tt.args...)...)
			t.Logf("stdout:\n%s", out)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(out+errOut, n) {
					t.Errorf("output holds %q:\n%s%s", n, out, errOut)
				}
			}
		})
	}
}

// TestValidateAgainstCluster checks a checkout against a real API server:
// unknown kinds, objects the server rejects, and the render settings of a
// Guard (varsFrom a ConfigMap, the age key of its decryption Secret).
func TestValidateAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	devenv.RequireBinaries(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	crds := filepath.Join(t.TempDir(), "crds")
	if err := config.WriteCRDs(crds); err != nil {
		t.Fatal(err)
	}
	cluster, err := devenv.Start(ctx, devenv.Options{CRDDirs: []string{crds}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	c, err := client.New(cluster.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	kube := cluster.AdminKubeconfig

	key, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: ${NS}\nstringData:\n  password: hunter2\n"),
		sopstest.Options{EncryptedRegex: "^stringData$"}, key.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "driftguard-system"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "existing"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars", Namespace: "driftguard-system"}, Data: map[string]string{"NS": "existing", "REPLICAS": "2"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: "driftguard-system"}, Data: map[string][]byte{"key.agekey": []byte(key.Identity)}},
		&v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: v1alpha1.GuardSpec{
			Git:        &v1alpha1.GitSource{URL: "https://git.example/shop.git", Path: "clusters/prod"},
			VarsFrom:   []v1alpha1.VarsReference{{Kind: "ConfigMap", Name: "cluster-vars"}},
			Decryption: &v1alpha1.Decryption{SecretRef: v1alpha1.SecretReference{Name: "sops-age"}},
		}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	deploy := func(replicas string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: ${NS}\nspec:\n  replicas: " + replicas +
			"\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx}]\n"
	}
	tests := []struct {
		name     string
		files    map[string]string
		path     string // relative to the repository root; with --guard the Guard's path is rendered
		args     []string
		wantCode int
		wantOut  []string
		never    []string
	}{
		{name: "the guard's settings: varsFrom and its age key", files: map[string]string{
			"clusters/prod/deploy.yaml": deploy("${REPLICAS}"),
			"clusters/prod/secret.yaml": string(secret),
		}, args: []string{"--guard", "shop"}, wantOut: []string{"ok: 2 objects in ", "accepted by the cluster in a dry run"}, never: []string{"hunter2"}},
		{name: "rejected by the API server", files: map[string]string{
			"clusters/prod/deploy.yaml": deploy("-1"),
		}, args: []string{"--guard", "shop"}, wantCode: 1, wantOut: []string{
			"clusters/prod/deploy.yaml:1: Deployment existing/web: rejected by the API server: ", "spec.replicas: Invalid value: -1",
		}},
		{name: "unknown kind, and a kind its CRD in the render defines", files: map[string]string{
			"apps/widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
			"apps/gadget.yaml": "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: made-here\n",
			"apps/ns.yaml":     "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: made-here\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: made-here\n",
			"apps/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
		}, path: "apps", wantCode: 1, wantOut: []string{
			"apps/widget.yaml:1: Widget w: kind Widget of example.com/v1 is not known to the cluster\n", "1 problem in ",
		}, never: []string{"Gadget", "made-here"}},
		{name: "unknown guard", files: map[string]string{"apps/cm.yaml": validCM}, args: []string{"--guard", "nope"}, wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeRepo(t, tt.files)
			args := append([]string{filepath.Join(root, tt.path), "--kubeconfig", kube}, tt.args...)
			out, errOut, code := runValidateCmd(t, args...)
			t.Logf("stdout:\n%s", out)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, n := range tt.never {
				if strings.Contains(out+errOut, n) {
					t.Errorf("output holds %q:\n%s%s", n, out, errOut)
				}
			}
		})
	}
	// Nothing was written by the dry runs.
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace("existing")); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			t.Errorf("dry run left %s/%s behind", cm.Namespace, cm.Name)
		}
	}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace("existing")); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("dry run left %d Secrets behind", len(secrets.Items))
	}
}
