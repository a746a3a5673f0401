package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/render/sopstest"
	"github.com/driftguard/driftguard/test/wait"
)

// createObjects creates objects the test needs in the cluster (namespaces,
// variable ConfigMaps, key Secrets) and deletes them when it ends.
func createObjects(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := h.Admin.Create(context.Background(), o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
		t.Cleanup(func() { _ = h.Admin.Delete(context.Background(), o) })
	}
}

// TestKustomizeGuard: a Guard whose path is a Kustomize overlay over a base
// elsewhere in the repository is built in-process and applied; every object
// names the file it comes from.
func TestKustomizeGuard(t *testing.T) {
	t.Parallel()
	const ns = "render-kustomize"
	repo := h.NewGuard(t, "render-kustomize", true, map[string]string{
		"base/kustomization.yaml": "resources:\n- settings.yaml\n",
		"base/settings.yaml":      "# shared settings\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  value: base\n",
		"overlays/prod/kustomization.yaml": `namespace: ` + ns + `
namePrefix: prod-
resources:
- namespace.yaml
- ../../base
configMapGenerator:
- name: flags
  literals: [mode=fast]
  options: {disableNameSuffixHash: true}
patches:
- patch: |
    - op: replace
      path: /data/value
      value: overlay
  target: {kind: ConfigMap, name: settings}
`,
		"overlays/prod/namespace.yaml": namespace(ns),
	}, func(s *v1alpha1.GuardSpec) { s.Git.Path = "overlays/prod" })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	waitValue(t, ns, "prod-settings", "overlay")
	flags, err := getConfigMap(t, ns, "prod-flags")
	if err != nil || flags.Data["mode"] != "fast" {
		t.Fatalf("generated ConfigMap: %v %v", flags, err)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "apply record of the base's ConfigMap", func(r audit.Record) bool {
		return r.Type == audit.Apply && r.Guard == repo.Guard && r.Object.Name == "prod-settings"
	})
	if rec.Source == nil || rec.Source.Path != "base/settings.yaml" || rec.Source.Line != 2 {
		t.Fatalf("the base's object must name base/settings.yaml:2, got %+v", rec.Source)
	}
}

const webChart = `apiVersion: v2
name: web
version: 0.1.0
`

// TestHelmGuard: a Guard whose path is a Helm chart renders it with its
// values files and inline values, releases it under the Guard's name into
// spec.helm.namespace, and applies its CRDs and subchart.
func TestHelmGuard(t *testing.T) {
	t.Parallel()
	const ns = "render-helm"
	values, err := json.Marshal(map[string]any{"greeting": "hello from the Guard"})
	if err != nil {
		t.Fatal(err)
	}
	repo := h.NewGuard(t, "render-helm", true, map[string]string{
		"charts/web/Chart.yaml":       webChart + "dependencies:\n- name: extra\n  version: 0.1.0\n",
		"charts/web/values.yaml":      "greeting: hello\ncolor: blue\nsize: small\n",
		"charts/web/values-prod.yaml": "color: red\n",
		"charts/web/templates/namespace.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: {{ .Release.Namespace }}
`,
		"charts/web/templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
data:
  greeting: {{ .Values.greeting | quote }}
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
`,
		"charts/web/templates/NOTES.txt": "not an object\n",
		"charts/web/crds/gizmos.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.render.example.com
spec:
  group: render.example.com
  scope: Namespaced
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`,
		"charts/web/charts/extra/Chart.yaml": "apiVersion: v2\nname: extra\nversion: 0.1.0\n",
		"charts/web/charts/extra/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
data:
  value: from the subchart
`,
	}, func(s *v1alpha1.GuardSpec) {
		s.Git.Path = "charts/web"
		s.Helm = &v1alpha1.HelmSpec{Namespace: ns, ValuesFiles: []string{"values-prod.yaml"}, Values: &apiextensionsv1.JSON{Raw: values}}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	cm, err := getConfigMap(t, ns, "render-helm-settings")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != "hello from the Guard" || cm.Data["color"] != "red" || cm.Data["size"] != "small" {
		t.Fatalf("values: want greeting from spec.helm.values, color from values-prod.yaml, size from values.yaml; got %v", cm.Data)
	}
	waitValue(t, ns, "render-helm-extra", "from the subchart")
	var crd apiextensionsv1.CustomResourceDefinition
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Name: "gizmos.render.example.com"}, &crd); err != nil {
		t.Fatalf("the chart's CRD is not applied: %v", err)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "apply record of the chart's ConfigMap", func(r audit.Record) bool {
		return r.Type == audit.Apply && r.Guard == repo.Guard && r.Object.Name == "render-helm-settings"
	})
	if rec.Source == nil || rec.Source.Path != "charts/web/templates/settings.yaml" {
		t.Fatalf("the chart's object must name its template, got %+v", rec.Source)
	}

	// A new values file in Git changes the release.
	next := repo.Change(t, "bigger", map[string]string{"charts/web/values-prod.yaml": "color: red\nsize: large\n"})
	h.WaitApplied(t, repo.Guard, next)
	if cm, err = getConfigMap(t, ns, "render-helm-settings"); err != nil || cm.Data["size"] != "large" {
		t.Fatalf("after the change: %v %v", cm.Data, err)
	}
}

// TestVarsFromConfigMap: ${VAR} is substituted from spec.varsFrom and
// spec.vars (spec.vars wins), defaults apply, and a change of the
// ConfigMap alone re-renders the same revision.
func TestVarsFromConfigMap(t *testing.T) {
	t.Parallel()
	const ns = "render-vars"
	createObjects(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars", Namespace: ns},
			Data: map[string]string{"CLUSTER": "eu-1", "OWNER": "from-configmap"}},
	)
	repo := h.NewGuard(t, "render-vars", true, map[string]string{
		"settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings-${CLUSTER}
  namespace: ` + ns + `
data:
  value: "${CLUSTER}/${OWNER}/${TIER:=web}"
  literal: "$${NOT_SUBSTITUTED}"
`,
	}, func(s *v1alpha1.GuardSpec) {
		s.Vars = map[string]string{"OWNER": "team-a"}
		s.VarsFrom = []v1alpha1.VarsReference{
			{Kind: "ConfigMap", Name: "cluster-vars", Namespace: ns},
			{Kind: "Secret", Name: "not-there", Namespace: ns, Optional: true},
		}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)
	waitValue(t, ns, "settings-eu-1", "eu-1/team-a/web")
	cm, err := getConfigMap(t, ns, "settings-eu-1")
	if err != nil || cm.Data["literal"] != "${NOT_SUBSTITUTED}" {
		t.Fatalf("$${...} must stay ${...}: %v %v", cm.Data, err)
	}

	// Only the ConfigMap changes: the same commit renders with the new value.
	var vars corev1.ConfigMap
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cluster-vars"}, &vars); err != nil {
		t.Fatal(err)
	}
	vars.Data["TIER"] = "api"
	if err := h.Admin.Update(context.Background(), &vars); err != nil {
		t.Fatal(err)
	}
	waitValue(t, ns, "settings-eu-1", "eu-1/team-a/api")
}

// TestSOPSSecretIsAppliedDecrypted: a Secret encrypted with sops and an
// age key is decrypted in memory with the key from spec.decryption and
// applied; its values never reach the Guard's status or the audit log.
func TestSOPSSecretIsAppliedDecrypted(t *testing.T) {
	t.Parallel()
	const ns = "render-sops"
	const password = "correct-horse-battery-staple"
	key, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := sopstest.Encrypt([]byte(`apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: `+ns+`
stringData:
  password: `+password+`
`), sopstest.Options{EncryptedRegex: "^(data|stringData)$"}, key.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(enc), password) {
		t.Fatal("the fixture is not encrypted")
	}
	createObjects(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-age", Namespace: ns},
			Data: map[string][]byte{"identity.agekey": []byte(key.Identity)}},
	)
	repo := h.NewGuard(t, "render-sops", true, map[string]string{
		"secret.yaml": string(enc),
		"plain.yaml":  configMap(ns, "plain", "not encrypted"),
	}, func(s *v1alpha1.GuardSpec) {
		s.Decryption = &v1alpha1.Decryption{Provider: "sops", SecretRef: v1alpha1.SecretReference{Name: "sops-age", Namespace: ns}}
	})
	g := h.WaitApplied(t, repo.Guard, repo.Initial)
	var s corev1.Secret
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["password"]) != password {
		t.Fatalf("applied password = %q, want the decrypted value", s.Data["password"])
	}
	if len(s.Data) != 1 {
		t.Fatalf("applied Secret has keys %v, want only password", s.Data)
	}
	status, err := json.Marshal(g.Status)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(status), password) {
		t.Fatalf("the Guard's status reveals the password: %s", status)
	}
	h.Audit.Wait(t, 10*time.Second, "apply record of the Secret", func(r audit.Record) bool {
		return r.Type == audit.Apply && r.Guard == repo.Guard && r.Object.Name == "db"
	})
	for _, r := range h.Audit.All() {
		line, _ := json.Marshal(r)
		if strings.Contains(string(line), password) {
			t.Fatalf("an audit record reveals the password: %s", line)
		}
	}
	if data, err := os.ReadFile(h.AuditFile); err == nil && strings.Contains(string(data), password) {
		t.Fatal("the audit file reveals the password")
	}

	// A commit encrypted for another key cannot be decrypted: the Guard
	// stalls naming the file, and the applied Secret stays.
	other, err := sopstest.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	otherEnc, err := sopstest.Encrypt([]byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: "+ns+"\nstringData:\n  password: changed\n"),
		sopstest.Options{EncryptedRegex: "^stringData$"}, other.Recipient)
	if err != nil {
		t.Fatal(err)
	}
	bad := repo.Change(t, "wrong key", map[string]string{"secret.yaml": string(otherEnc)})
	stalled := waitStalled(t, repo.Guard, bad)
	if !strings.Contains(stalled.Message, "secret.yaml") || !strings.Contains(stalled.Message, "none of the 1 age key given matches") {
		t.Fatalf("the condition must name the file and the reason: %s", stalled.Message)
	}
	if err := h.Admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "db"}, &s); err != nil || string(s.Data["password"]) != password {
		t.Fatalf("the applied Secret changed or went away: %v", err)
	}
}

// waitStalled waits until the Guard has tried rev and is Stalled, and
// returns its Ready condition.
func waitStalled(t *testing.T, guard, rev string) *metav1.Condition {
	t.Helper()
	var ready *metav1.Condition
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("guard %s stalls on %s", guard, rev), func() error {
		g := h.Guard(t, guard)
		stalled := meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionStalled)
		ready = meta.FindStatusCondition(g.Status.Conditions, v1alpha1.ConditionReady)
		if g.Status.LastAttemptedRevision != rev || stalled == nil || stalled.Status != metav1.ConditionTrue ||
			ready == nil || ready.Status != metav1.ConditionFalse {
			return fmt.Errorf("revision %s, conditions %+v", g.Status.LastAttemptedRevision, g.Status.Conditions)
		}
		return nil
	})
	return ready
}

// TestUnsetVariableStallsAndDeletesNothing: a commit that uses a variable
// no source sets stalls the Guard with a message naming the variable and
// the file; the last good revision stays applied and nothing is pruned.
func TestUnsetVariableStallsAndDeletesNothing(t *testing.T) {
	t.Parallel()
	const ns = "render-unset"
	repo := h.NewGuard(t, "render-unset", true, map[string]string{
		"ns.yaml": namespace(ns),
		"a.yaml":  configMap(ns, "a", "${GREETING}"),
		"b.yaml":  configMap(ns, "b", "good"),
	}, func(s *v1alpha1.GuardSpec) { s.Vars = map[string]string{"GREETING": "hello"} })
	h.WaitApplied(t, repo.Guard, repo.Initial)
	waitValue(t, ns, "a", "hello")

	bad := repo.Change(t, "use an unset variable", map[string]string{
		"b.yaml": "# b needs a region\n" + configMap(ns, "b", "${REGION}"),
	}, "a.yaml")
	ready := waitStalled(t, repo.Guard, bad)
	if !strings.Contains(ready.Message, `variable "REGION" is not set and has no default`) || !strings.Contains(ready.Message, "b.yaml:2") {
		t.Fatalf("Ready must name the variable and the file: %s", ready.Message)
	}
	if g := h.Guard(t, repo.Guard); g.Status.LastAppliedRevision != repo.Initial {
		t.Fatalf("last applied revision = %s, want %s", g.Status.LastAppliedRevision, repo.Initial)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "render error record", func(r audit.Record) bool {
		return r.Type == audit.Error && r.Guard == repo.Guard && r.Source != nil && r.Source.Revision == bad
	})
	if rec.Source.Path != "b.yaml" || rec.Source.Line != 2 {
		t.Fatalf("render error record must name b.yaml:2, got %+v", rec.Source)
	}
	// a.yaml left Git in the bad commit, but a bad revision prunes nothing.
	for name, want := range map[string]string{"a": "hello", "b": "good"} {
		cm, err := getConfigMap(t, ns, name)
		if err != nil || cm.Data["value"] != want {
			t.Fatalf("%s after the bad revision: %v %v", name, cm.Data, err)
		}
	}

	fixed := repo.Change(t, "set the region", map[string]string{"b.yaml": configMap(ns, "b", "${REGION:=eu}")})
	h.WaitApplied(t, repo.Guard, fixed)
	waitValue(t, ns, "b", "eu")
}
