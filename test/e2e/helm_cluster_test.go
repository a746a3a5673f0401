package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// helmClusterChart needs the cluster: a kubeVersion Helm's default
// (v1.20.0) does not meet, .Capabilities, values from a ConfigMap key and
// from a Secret's whole values.yaml; a strict mode whose failure quotes
// the Secret's password.
var helmClusterChart = map[string]string{
	"charts/hc/Chart.yaml":  "apiVersion: v2\nname: hc\nversion: 0.1.0\nkubeVersion: \">=1.21.0-0\"\n",
	"charts/hc/values.yaml": "color: red\nsize: small\nstrict: false\ndb:\n  user: app\n  password: \"\"\n",
	"charts/hc/templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: hc-settings
data:
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "helmcluster.example.com/v1/Widget" | quote }}
`,
	"charts/hc/templates/db.yaml": `{{- if .Values.strict }}{{ fail (printf "password %s is too weak" .Values.db.password) }}{{ end -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: hc-db
data:
  dsn: "postgres://{{ .Values.db.user }}:{{ .Values.db.password }}@db/app"
`,
}

// TestHelmFromTheCluster: a chart rendered with the cluster's
// .Capabilities (its Kubernetes version, a CRD's kind), values from a
// ConfigMap key and a Secret's values.yaml of the guard's namespace, and
// post-render Kustomize patches (JSON 6902 with a target, strategic merge
// naming the object). A change of the ConfigMap alone reaches the cluster;
// the Secret's password reaches the object it is rendered into, but never
// the Guard's status (even a chart failure that quotes it) or the audit.
func TestHelmFromTheCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns, guardNS = "helm-cluster", "driftguard-system"
	const password = "Tr0ub4dor-and-3-horses"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.helmcluster.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "helmcluster.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget", Plural: "widgets", Singular: "widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}}},
		},
	}
	colors := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hc-colors", Namespace: guardNS},
		Data: map[string]string{"color": "green", "values.yaml": "size: not-read\n"}}
	createObjects(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		crd, colors,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hc-db", Namespace: guardNS},
			Data: map[string][]byte{"values.yaml": []byte("db:\n  user: svc-user\n  password: " + password + "\n")}},
	)
	kube, err := kubernetes.NewForConfig(h.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	version, err := kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}

	repo := h.NewGuard(t, "helm-cluster", true, helmClusterChart, func(s *v1alpha1.GuardSpec) {
		s.Git.Path = "charts/hc"
		s.Helm = &v1alpha1.HelmSpec{
			Namespace: ns,
			ValuesFrom: []v1alpha1.HelmValuesReference{
				{Kind: "ConfigMap", Name: "hc-colors", ValuesKey: "color", TargetPath: "color"},
				{Kind: "Secret", Name: "hc-db"},
				{Kind: "Secret", Name: "hc-not-there", Optional: true},
			},
			PostRenderers: []v1alpha1.HelmPostRenderer{{Kustomize: &v1alpha1.KustomizePostRenderer{Patches: []v1alpha1.KustomizePatch{
				{Patch: `[{"op":"add","path":"/data/patched","value":"by-json6902"}]`, Target: &v1alpha1.PatchTarget{Kind: "ConfigMap", Name: "hc-set.*"}},
				{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hc-db\n  labels:\n    patched: strategic-merge\n"},
			}}}},
		}
	})
	h.WaitApplied(t, repo.Guard, repo.Initial)

	// A CRD created just now may be seen only when the guard asks the
	// cluster again (once a minute): the chart renders again then.
	wait.Eventually(t, 100*time.Second, "hc-settings rendered with the cluster's capabilities and values", func() error {
		cm, err := getConfigMap(t, ns, "hc-settings")
		if err != nil {
			return err
		}
		want := map[string]string{"color": "green", "size": "small", "kube": version.GitVersion, "widgets": "true", "patched": "by-json6902"}
		for k, v := range want {
			if cm.Data[k] != v {
				return fmt.Errorf("data %v, want %v", cm.Data, want)
			}
		}
		return nil
	})
	if version.GitVersion == "v1.20.0" {
		t.Fatal("the API server says v1.20.0, Helm's default: the test cannot tell them apart")
	}
	db, err := getConfigMap(t, ns, "hc-db")
	if err != nil {
		t.Fatal(err)
	}
	if db.Data["dsn"] != "postgres://svc-user:"+password+"@db/app" || db.Labels["patched"] != "strategic-merge" {
		t.Fatalf("hc-db: data %v labels %v; want the Secret's user and password, the strategic merge patch's label", db.Data, db.Labels)
	}
	rec := h.Audit.Wait(t, 10*time.Second, "apply record of hc-settings", func(r audit.Record) bool {
		return r.Type == audit.Apply && r.Guard == repo.Guard && r.Object.Name == "hc-settings"
	})
	if rec.Source == nil || rec.Source.Path != "charts/hc/templates/settings.yaml" {
		t.Fatalf("a patched object still names its template, got %+v", rec.Source)
	}

	// Only the ConfigMap changes: the same commit renders with its new value.
	if err := h.Admin.Get(ctx, client.ObjectKeyFromObject(colors), colors); err != nil {
		t.Fatal(err)
	}
	colors.Data["color"] = "blue"
	if err := h.Admin.Update(ctx, colors); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "hc-settings follows the ConfigMap", func() error {
		cm, err := getConfigMap(t, ns, "hc-settings")
		if err != nil {
			return err
		}
		if cm.Data["color"] != "blue" {
			return fmt.Errorf("color %q", cm.Data["color"])
		}
		return nil
	})

	// A revision whose chart fails quoting the password: the status says
	// why, with the password redacted.
	strict := repo.Change(t, "strict", map[string]string{"charts/hc/values.yaml": strings.Replace(helmClusterChart["charts/hc/values.yaml"], "strict: false", "strict: true", 1)})
	stalled := waitStalled(t, repo.Guard, strict)
	if !strings.Contains(stalled.Message, "is too weak") || !strings.Contains(stalled.Message, redact.Marker) {
		t.Fatalf("the condition must give the chart's failure, redacted: %s", stalled.Message)
	}
	status, err := json.Marshal(h.Guard(t, repo.Guard).Status)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(status), password) {
		t.Fatalf("the Guard's status reveals the Secret's password: %s", status)
	}
	h.Audit.Wait(t, 10*time.Second, "render failure record", func(r audit.Record) bool {
		return r.Type == audit.Error && r.Guard == repo.Guard && r.Operation == "RENDER"
	})
	for _, r := range h.Audit.All() {
		line, _ := json.Marshal(r)
		if strings.Contains(string(line), password) {
			t.Fatalf("an audit record reveals the Secret's password: %s", line)
		}
	}
	if data, err := os.ReadFile(h.AuditFile); err == nil && strings.Contains(string(data), password) {
		t.Fatal("the audit file reveals the Secret's password")
	}
	if db, err := getConfigMap(t, ns, "hc-db"); err != nil || !strings.Contains(db.Data["dsn"], password) {
		t.Fatalf("the failed revision must leave the applied objects alone: %v %v", db.Data, err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestClusterCapabilitiesKeptAndRefreshed: the capabilities charts see are
// the API server's (its version, a CRD's kind once it is served), kept for
// the TTL, asked again after it, and the last answer stays in use when the
// API server cannot be reached, where rendering with Helm's defaults would
// render other objects.
func TestClusterCapabilitiesKeptAndRefreshed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := discovery.NewDiscoveryClientForConfig(h.Cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 2 * time.Second
	cc := &reconcile.ClusterCapabilities{Discovery: d, TTL: ttl}
	first, err := cc.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	version, err := d.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if first.KubeVersion != version.GitVersion || !slices.Contains(first.APIVersions, "apps/v1") || !slices.Contains(first.APIVersions, "apps/v1/Deployment") {
		t.Fatalf("capabilities %s with %d API versions: want the server's version, apps/v1 and apps/v1/Deployment", first.KubeVersion, len(first.APIVersions))
	}
	const kind = "capscache.example.com/v1/Gadget"
	if slices.Contains(first.APIVersions, kind) {
		t.Fatalf("%s before its CRD exists", kind)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.capscache.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "capscache.example.com", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", Plural: "gadgets", Singular: "gadget", ListKind: "GadgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}}},
		},
	}
	createObjects(t, crd)
	wait.Eventually(t, 30*time.Second, "the CRD served", func() error {
		_, err := d.ServerResourcesForGroupVersion("capscache.example.com/v1")
		return err
	})
	// Within the TTL: the same answer, without asking.
	if again, err := cc.Get(ctx); err != nil || again != first {
		t.Fatalf("within the TTL: %p %v, want the kept answer %p", again, err, first)
	}
	var fresh *render.Capabilities
	wait.Eventually(t, 30*time.Second, "the new kind after the TTL", func() error {
		if fresh, err = cc.Get(ctx); err != nil {
			return err
		}
		if !slices.Contains(fresh.APIVersions, kind) {
			return fmt.Errorf("%d API versions without %s", len(fresh.APIVersions), kind)
		}
		return nil
	})

	// The API server cannot be reached (a closed loopback port): the last
	// answer stays; without one, an error.
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: fmt.Sprintf("http://127.0.0.1:%d", port), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cc.Discovery = down
	// Part of the scenario, not a wait: past the TTL the cache asks again,
	// and finds the API server down.
	time.Sleep(ttl)
	if kept, err := cc.Get(ctx); err != nil || kept != fresh {
		t.Fatalf("discovery failing: %p %v, want the last answer %p", kept, err, fresh)
	}
	if got, err := (&reconcile.ClusterCapabilities{Discovery: down}).Get(ctx); err == nil || got != nil || !strings.Contains(err.Error(), ".Capabilities") {
		t.Fatalf("no answer yet and discovery failing: %v %v, want an error naming .Capabilities", got, err)
	}
}

// TestHelmValuesFromReads: what spec.helm.valuesFrom reads from the API
// server: a ConfigMap's values.yaml by default, another key, binaryData,
// a Secret's key (marked secret), a targetPath carried over, optional
// objects and keys skipped, and errors that name the field, the object and
// the key, never a value.
func TestHelmValuesFromReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ns = "driftguard-system"
	createObjects(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hvf-cm", Namespace: ns},
			Data:       map[string]string{"values.yaml": "a: 1\n", "other": "b: 2\n"},
			BinaryData: map[string][]byte{"bin": []byte("c: 3\n")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hvf-secret", Namespace: ns},
			Data: map[string][]byte{"values.yaml": []byte("password: hvf-secret-value\n"), "token": []byte("hvf-token-value")}},
	)
	type got struct {
		from, data, target string
		secret             bool
	}
	for _, tc := range []struct {
		name    string
		refs    []v1alpha1.HelmValuesReference
		want    []got
		wantErr []string
	}{{
		name: "default key, another key, binaryData",
		refs: []v1alpha1.HelmValuesReference{{Kind: "ConfigMap", Name: "hvf-cm"}, {Kind: "ConfigMap", Name: "hvf-cm", ValuesKey: "other"}, {Kind: "ConfigMap", Name: "hvf-cm", ValuesKey: "bin"}},
		want: []got{
			{from: "spec.helm.valuesFrom[0] (ConfigMap driftguard-system/hvf-cm, key values.yaml)", data: "a: 1\n"},
			{from: "spec.helm.valuesFrom[1] (ConfigMap driftguard-system/hvf-cm, key other)", data: "b: 2\n"},
			{from: "spec.helm.valuesFrom[2] (ConfigMap driftguard-system/hvf-cm, key bin)", data: "c: 3\n"},
		},
	}, {
		name: "a Secret's values.yaml and a key at a target path, both secret",
		refs: []v1alpha1.HelmValuesReference{{Kind: "Secret", Name: "hvf-secret"}, {Kind: "Secret", Name: "hvf-secret", ValuesKey: "token", TargetPath: "auth.token"}},
		want: []got{
			{from: "spec.helm.valuesFrom[0] (Secret driftguard-system/hvf-secret, key values.yaml)", data: "password: hvf-secret-value\n", secret: true},
			{from: "spec.helm.valuesFrom[1] (Secret driftguard-system/hvf-secret, key token)", data: "hvf-token-value", target: "auth.token", secret: true},
		},
	}, {
		name: "optional: a missing object or key is skipped",
		refs: []v1alpha1.HelmValuesReference{{Kind: "Secret", Name: "hvf-none", Optional: true}, {Kind: "ConfigMap", Name: "hvf-cm", ValuesKey: "none", Optional: true}, {Kind: "ConfigMap", Name: "hvf-cm", ValuesKey: "other"}},
		want: []got{{from: "spec.helm.valuesFrom[2] (ConfigMap driftguard-system/hvf-cm, key other)", data: "b: 2\n"}},
	}, {
		name:    "a missing object",
		refs:    []v1alpha1.HelmValuesReference{{Kind: "ConfigMap", Name: "hvf-cm"}, {Kind: "Secret", Name: "hvf-none"}},
		wantErr: []string{"spec.helm.valuesFrom[1]: secret driftguard-system/hvf-none", "not found"},
	}, {
		name:    "a missing key",
		refs:    []v1alpha1.HelmValuesReference{{Kind: "Secret", Name: "hvf-secret", ValuesKey: "nope"}},
		wantErr: []string{"spec.helm.valuesFrom[0]: Secret driftguard-system/hvf-secret has no key nope"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := &v1alpha1.Guard{Spec: v1alpha1.GuardSpec{Helm: &v1alpha1.HelmSpec{ValuesFrom: tc.refs}}}
			vals, err := reconcile.HelmValuesFrom(ctx, h.Admin, g, ns)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, want %q", tc.wantErr)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not say %q", err, s)
					}
				}
				if strings.Contains(err.Error(), "hvf-secret-value") || strings.Contains(err.Error(), "hvf-token-value") {
					t.Errorf("error %q holds a value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var out []got
			for _, v := range vals {
				out = append(out, got{from: v.From, data: string(v.Data), target: v.TargetPath, secret: v.Secret})
			}
			if !slices.Equal(out, tc.want) {
				t.Fatalf("read %+v\nwant %+v", out, tc.want)
			}
		})
	}
}
