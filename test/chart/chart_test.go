// Package chart lints, renders and installs charts/driftguard with a real
// helm into a real API server, and runs the guard as the chart's
// ServiceAccount.
package chart

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/webhook"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the chart")

// helm runs the real helm binary; a failure fails the test.
func helm(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := helmErr(t, kubeconfig, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// helmErr runs helm and returns its output and error.
func helmErr(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(devenv.DefaultBinDir(), "helm"), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	if kubeconfig != "" {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+kubeconfig)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

func chartDir(t *testing.T) string {
	t.Helper()
	chart, err := filepath.Abs("../../charts/driftguard")
	if err != nil {
		t.Fatal(err)
	}
	return chart
}

// variants are the value sets the chart is rendered and installed with.
var variants = []struct {
	name, values string
	install      bool // false: needs a CRD the test API server lacks (ServiceMonitor)
}{
	{"default", "", true},
	{"strict", "testdata/values-strict.yaml", true},
	{"admin", "testdata/values-admin.yaml", false},
}

func render(t *testing.T, values string) string {
	t.Helper()
	args := []string{"template", release, chartDir(t), "--namespace", releaseNS}
	if values != "" {
		args = append(args, "--values", values)
	}
	return helm(t, "", args...)
}

func TestLint(t *testing.T) {
	for _, v := range variants {
		args := []string{"lint", "--strict", chartDir(t), "--namespace", releaseNS}
		if v.values != "" {
			args = append(args, "--values", v.values)
		}
		helm(t, "", args...)
	}
}

// TestTemplateGolden compares the rendered manifests with the files in
// testdata; go test -run TestTemplateGolden ./test/chart -update rewrites them
// (review the diff).
func TestTemplateGolden(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			got := render(t, v.values)
			golden := filepath.Join("testdata", v.name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("rendered chart differs from %s (run with -update and review the diff):\n%s", golden, firstDiff(string(want), got))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts, with context.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, wl, gl)
		}
	}
	return ""
}

// TestRendered checks what the manifests promise, for each variant.
func TestRendered(t *testing.T) {
	objs := map[string][]*unstructured.Unstructured{}
	for _, v := range variants {
		objs[v.name] = decode(t, render(t, v.values))
	}
	find := func(variant, kind, name string) *unstructured.Unstructured {
		t.Helper()
		for _, o := range objs[variant] {
			if o.GetKind() == kind && (name == "" || o.GetName() == name) {
				return o
			}
		}
		return nil
	}
	count := func(variant, kind string) int {
		n := 0
		for _, o := range objs[variant] {
			if o.GetKind() == kind {
				n++
			}
		}
		return n
	}

	// Secure defaults of the pod, in every variant.
	for _, v := range variants {
		d := find(v.name, "Deployment", release)
		if d == nil {
			t.Fatalf("%s: no Deployment", v.name)
		}
		pod, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
		c := pod["containers"].([]any)[0].(map[string]any)
		sc := c["securityContext"].(map[string]any)
		for path, want := range map[string]any{
			"runAsNonRoot": true, "allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
		} {
			if sc[path] != want {
				t.Errorf("%s: container securityContext.%s = %v", v.name, path, sc[path])
			}
		}
		if drop, _, _ := unstructured.NestedStringSlice(sc, "capabilities", "drop"); len(drop) != 1 || drop[0] != "ALL" {
			t.Errorf("%s: capabilities.drop %v", v.name, drop)
		}
		if p, _, _ := unstructured.NestedString(pod, "securityContext", "seccompProfile", "type"); p != "RuntimeDefault" {
			t.Errorf("%s: seccomp %q", v.name, p)
		}
		for _, r := range []string{"requests", "limits"} {
			if m, _, _ := unstructured.NestedMap(c, "resources", r); len(m) == 0 {
				t.Errorf("%s: no resource %s", v.name, r)
			}
		}
	}
	args := func(variant string) string {
		d := find(variant, "Deployment", release)
		a, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		return fmt.Sprint(a[0].(map[string]any)["args"])
	}
	for _, tc := range []struct {
		variant string
		want    []string
	}{
		{"default", []string{"--failure-policy=Ignore", "--webhook-timeout=3s", "--leader-elect=true", "--exclude-namespaces=kube-system,driftguard-system",
			"--cert-secret=driftguard-webhook-tls", "--tls-min-version=1.3", "--self-protect=true", "--deployment-name=driftguard", "--policy-dir=/policy",
			"--metrics-secure=true", "--webhook-max-request-bytes=7Mi", "--webhook-max-bytes-in-flight=32Mi"}},
		{"strict", []string{"--failure-policy=Fail", "--webhook-timeout=5s", "--exclude-namespaces=kube-system,driftguard-system,monitoring",
			"--break-glass-groups=sre,oncall", "--ignore-file=/config/ignore.yaml", "--receiver-addr=:9292",
			"--webhook-client-ca-file=/webhook-client-ca/ca.crt", "--webhook-client-names=kube-apiserver-webhook-client"}},
		{"admin", []string{"--leader-elect=false", "--self-protect=false", "--tls-min-version=1.2", "--zap-log-level=debug", "--audit-events=false", "--cert-lifetime=720h"}},
	} {
		a := args(tc.variant)
		for _, w := range tc.want {
			if !strings.Contains(a, w) {
				t.Errorf("%s: args lack %s: %s", tc.variant, w, a)
			}
		}
	}
	if strings.Contains(args("admin"), "--policy-dir") {
		t.Error("admin: the built-in policy must serve without a policy ConfigMap")
	}
	if img, _, _ := unstructured.NestedSlice(find("default", "Deployment", release).Object, "spec", "template", "spec", "containers"); img[0].(map[string]any)["image"] != "ghcr.io/driftguard/driftguard:"+appVersion(t) {
		t.Errorf("default image %v does not follow appVersion %s", img[0].(map[string]any)["image"], appVersion(t))
	}
	if r, _, _ := unstructured.NestedFieldNoCopy(find("default", "Deployment", release).Object, "spec", "replicas"); fmt.Sprint(r) != "2" {
		t.Errorf("default replicas %v, want 2", r)
	}

	// Optional objects appear only when asked for.
	for _, tc := range []struct {
		variant, kind string
		want          int
	}{
		{"default", "PodDisruptionBudget", 1}, {"admin", "PodDisruptionBudget", 0},
		{"default", "NetworkPolicy", 1}, {"strict", "NetworkPolicy", 1}, {"admin", "NetworkPolicy", 1},
		{"default", "ServiceMonitor", 0}, {"admin", "ServiceMonitor", 1},
		{"default", "Guard", 0}, {"strict", "Guard", 1},
		{"default", "ConfigMap", 1}, {"strict", "ConfigMap", 1}, {"admin", "ConfigMap", 0},
		{"default", "ClusterRole", 4}, {"admin", "ClusterRole", 3}, {"strict", "ClusterRole", 5},
		{"default", "ClusterRoleBinding", 3}, {"strict", "ClusterRoleBinding", 3}, {"default", "RoleBinding", 1}, {"strict", "RoleBinding", 2}, {"default", "ServiceAccount", 1}, {"strict", "ServiceAccount", 2},
		{"default", "ValidatingWebhookConfiguration", 1}, {"default", "MutatingWebhookConfiguration", 1},
	} {
		if got := count(tc.variant, tc.kind); got != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.variant, got, tc.kind, tc.want)
		}
	}
	// RBAC: least privilege unless clusterAdmin.
	for _, o := range objs["default"] {
		if o.GetKind() == "ClusterRoleBinding" && strings.Contains(fmt.Sprint(o.Object["roleRef"]), "cluster-admin") {
			t.Error("default: bound to cluster-admin")
		}
	}
	if b := find("admin", "ClusterRoleBinding", release+"-cluster-admin"); b == nil {
		t.Error("admin: rbac.clusterAdmin binds nothing to cluster-admin")
	}
	// Per-Guard identity: the guard impersonates the ServiceAccounts of its
	// own namespace only; with clusterWide false it writes no managed kind
	// itself, and the tenant's account writes them in its namespaces.
	verbsOf := func(o *unstructured.Unstructured) []string {
		var out []string
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, r := range rules {
			vs, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "verbs")
			out = append(out, vs...)
		}
		return out
	}
	for _, v := range []string{"default", "strict"} {
		role := find(v, "Role", release)
		if !strings.Contains(fmt.Sprint(role.Object["rules"]), "impersonate") {
			t.Errorf("%s: the guard's Role does not let it impersonate its namespace's ServiceAccounts: %v", v, role.Object["rules"])
		}
	}
	for _, o := range objs["default"] {
		if strings.Contains(fmt.Sprint(o.Object["rules"]), "impersonate") && o.GetKind() != "Role" {
			t.Errorf("default: %s %s grants impersonate beyond the release namespace", o.GetKind(), o.GetName())
		}
	}
	for _, verb := range verbsOf(find("strict", "ClusterRole", release+"-managed")) {
		if verb != "get" && verb != "list" && verb != "watch" {
			t.Errorf("strict (clusterWide false): the guard's own ClusterRole grants %s", verb)
		}
	}
	if !slices.Contains(verbsOf(find("default", "ClusterRole", release+"-managed")), "patch") {
		t.Error("default (clusterWide true): the guard's own ClusterRole no longer writes the managed kinds")
	}
	if rb := find("strict", "RoleBinding", release+"-tenant-tenant"); rb == nil || rb.GetNamespace() != "default" ||
		!strings.Contains(fmt.Sprint(rb.Object["subjects"]), "name:tenant namespace:"+releaseNS) {
		t.Errorf("strict: tenant RoleBinding %v", rb)
	}
	if !slices.Contains(verbsOf(find("strict", "ClusterRole", release+"-tenant")), "patch") {
		t.Error("strict: the tenant ClusterRole does not write the managed kinds")
	}
	if a := args("strict"); !strings.Contains(a, "--default-service-account=tenant") {
		t.Errorf("strict: args lack --default-service-account=tenant: %s", a)
	}
	if a := args("default"); strings.Contains(a, "--default-service-account") {
		t.Errorf("default: %s", a)
	}
	// The NetworkPolicy opens only the webhook port to the API server.
	np := find("strict", "NetworkPolicy", "")
	ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
	if len(ingress) != 3 || !strings.Contains(fmt.Sprint(ingress[0]), "port:webhook") || !strings.Contains(fmt.Sprint(ingress[0]), "10.0.0.0/24") {
		t.Errorf("strict: NetworkPolicy ingress %v", ingress)
	}
	// By default: the webhook port from anywhere (the API server's source
	// depends on the cluster), nothing else in; out, DNS and every address
	// but link-local and the cloud metadata services.
	for _, v := range []string{"default", "strict"} {
		np := find(v, "NetworkPolicy", "")
		ingress, _, _ := unstructured.NestedSlice(np.Object, "spec", "ingress")
		egress, _, _ := unstructured.NestedSlice(np.Object, "spec", "egress")
		types, _, _ := unstructured.NestedStringSlice(np.Object, "spec", "policyTypes")
		if len(types) != 2 || len(egress) != 2 || !strings.Contains(fmt.Sprint(egress[0]), "port:53") {
			t.Errorf("%s: NetworkPolicy types %v egress %v", v, types, egress)
		}
		for _, blocked := range []string{"169.254.0.0/16", "fd00:ec2::254/128"} {
			if !strings.Contains(fmt.Sprint(egress[1]), blocked) {
				t.Errorf("%s: NetworkPolicy egress lets the guard reach %s: %v", v, blocked, egress[1])
			}
		}
		if v == "default" && (len(ingress) != 1 || fmt.Sprint(ingress[0]) != "map[ports:[map[port:webhook protocol:TCP]]]") {
			t.Errorf("default: NetworkPolicy ingress %v, want the webhook port only, from anywhere", ingress)
		}
	}
	if egress, _, _ := unstructured.NestedSlice(np.Object, "spec", "egress"); !strings.Contains(fmt.Sprint(egress), "192.0.2.0/24") {
		t.Errorf("strict: extraBlockedCIDRs not blocked: %v", egress)
	}
	// metrics.secure: the guard may review tokens; scrapers get /metrics.
	auth := find("default", "ClusterRole", release+"-metrics-auth")
	reader := find("default", "ClusterRole", release+"-metrics-reader")
	if auth == nil || !strings.Contains(fmt.Sprint(auth.Object["rules"]), "tokenreviews") || !strings.Contains(fmt.Sprint(auth.Object["rules"]), "subjectaccessreviews") ||
		reader == nil || fmt.Sprint(reader.Object["rules"]) != "[map[nonResourceURLs:[/metrics] verbs:[get]]]" {
		t.Errorf("default: metrics ClusterRoles %v %v", auth, reader)
	}
	if b := find("admin", "ClusterRoleBinding", release+"-metrics-reader"); b == nil || !strings.Contains(fmt.Sprint(b.Object["subjects"]), "prometheus-k8s") {
		t.Errorf("admin: metrics.readers not bound: %v", b)
	}
	if sm := find("admin", "ServiceMonitor", ""); !strings.Contains(fmt.Sprint(sm.Object["spec"]), "scheme:https") {
		t.Errorf("admin: the ServiceMonitor does not scrape over HTTPS: %v", sm.Object["spec"])
	}

	// The webhook configurations are skeletons of what the guard registers:
	// the same webhooks, Service, paths and required fields, nothing the
	// guard sets from its flags (helm and the guard never own one field).
	for _, v := range variants {
		reg := webhook.Registration{Name: release, ServiceNamespace: releaseNS, ServiceName: release, ServicePort: 443,
			LabelKey: "driftguard.io/guard"}
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		var mwc admissionregistrationv1.MutatingWebhookConfiguration
		fromUnstructured(t, find(v.name, "ValidatingWebhookConfiguration", release), &vwc)
		fromUnstructured(t, find(v.name, "MutatingWebhookConfiguration", release), &mwc)
		want := reg.Configuration().Webhooks
		if len(vwc.Webhooks) != len(want) {
			t.Fatalf("%s: %d validating webhooks, the guard registers %d", v.name, len(vwc.Webhooks), len(want))
		}
		for i, w := range vwc.Webhooks {
			skeleton := admissionregistrationv1.ValidatingWebhook{Name: want[i].Name, ClientConfig: want[i].ClientConfig,
				SideEffects: want[i].SideEffects, AdmissionReviewVersions: want[i].AdmissionReviewVersions}
			if !apiequality.Semantic.DeepEqual(w, skeleton) {
				t.Errorf("%s: validating webhook %d is not the skeleton of the guard's:\n%+v\n%+v", v.name, i, w, skeleton)
			}
		}
		wantM := reg.MutatingConfiguration().Webhooks
		if len(mwc.Webhooks) != 1 || !apiequality.Semantic.DeepEqual(mwc.Webhooks[0], admissionregistrationv1.MutatingWebhook{Name: wantM[0].Name,
			ClientConfig: wantM[0].ClientConfig, SideEffects: wantM[0].SideEffects, AdmissionReviewVersions: wantM[0].AdmissionReviewVersions}) {
			t.Errorf("%s: the mutating webhook is not the skeleton of the guard's: %+v", v.name, mwc.Webhooks)
		}
	}

	// The default policy ConfigMap holds the policy built into the binary.
	cm := find("default", "ConfigMap", release+"-policy")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	for name, src := range policy.DefaultModules() {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
		if data[filepath.Base(name)] != src {
			t.Errorf("charts/driftguard/files/policy/%s differs from policy/default/%s: copy it again", filepath.Base(name), name)
		}
	}
}

// TestSchemaRejectsBadValues: wrong types and unknown keys fail with the key.
func TestSchemaRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		set, want string
	}{
		{"replica=2", "replica"},
		{"replicas=two", "/replicas"},
		{"webhook.failurePolicy=Sometimes", "/webhook/failurePolicy"},
		{"webhook.timeoutSeconds=60", "/webhook/timeoutSeconds"},
		{"rbac.managedResources[0].kinds[0]=Secret", "kinds"},
		{"certificates.lifetime=soon", "/certificates/lifetime"},
		{"webhook.maxRequestBytes=7MB", "/webhook/maxRequestBytes"},
		{"networkPolicy.egress.extraBlockedCIDRs[0]=metadata", "/networkPolicy/egress/extraBlockedCIDRs/0"},
		{"guard.create=true", "guard.spec names no source"},
		{"guard.create=true,guard.spec.url=https://git.example/a.git", "guard.spec.git.url"},
		{"rbac.clusterWide=false,rbac.clusterAdmin=true", "exclude each other"},
		{"rbac.clusterWide=false,rbac.impersonation.enabled=false", "need rbac.impersonation.enabled"},
		{"rbac.impersonation.defaultServiceAccount=Team_A", "/rbac/impersonation/defaultServiceAccount"},
		{"rbac.tenants[0].name=team-a,rbac.tenants[0].namespaces={default}", "is the guard's own"},
		{"rbac.tenants[0].name=driftguard,rbac.tenants[0].namespaces={shop}", "the guard's own ServiceAccount"},
	} {
		out, err := helmErr(t, "", "template", release, chartDir(t), "--set", tc.set)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("--set %s: want an error naming %s, got %v:\n%s", tc.set, tc.want, err, out)
		}
	}
}

// TestInstallUpgradeUninstall installs each variant with helm into a real
// API server (every object accepted), upgrades it, and uninstalls it.
func TestInstallUpgradeUninstall(t *testing.T) {
	cluster := startCluster(t)
	kubectl := kubectlOf(cluster)
	for _, v := range variants {
		if !v.install {
			continue
		}
		t.Run(v.name, func(t *testing.T) {
			ns := "dg-" + v.name
			args := []string{"install", release, chartDir(t), "--namespace", ns, "--create-namespace", "--wait=false"}
			if v.values != "" {
				args = append(args, "--values", v.values)
			}
			notes := helm(t, cluster.AdminKubeconfig, args...)
			if !strings.Contains(notes, "kubectl -n "+ns+" rollout status deployment/"+release) {
				t.Errorf("NOTES do not tell how to check the install:\n%s", notes)
			}
			manifest := helm(t, cluster.AdminKubeconfig, "get", "manifest", release, "--namespace", ns)
			objs := decode(t, manifest)
			if len(objs) < 12 {
				t.Fatalf("only %d objects installed", len(objs))
			}
			for _, o := range objs {
				get := []string{"get", resourceOf(o), o.GetName()}
				if o.GetNamespace() != "" {
					get = append(get, "-n", o.GetNamespace())
				}
				if out, err := kubectl(get...); err != nil {
					t.Errorf("%s %s not in the cluster after install: %v %s", o.GetKind(), o.GetName(), err, out)
				}
			}
			// The API server took the NetworkPolicy (on by default) as
			// rendered: both directions, the metadata services blocked.
			if out, err := kubectl("get", "networkpolicy", release, "-n", ns, "-o", "jsonpath={.spec.policyTypes} {.spec.egress[1].to[*].ipBlock.except}"); err != nil ||
				!strings.Contains(out, "Egress") || !strings.Contains(out, "169.254.0.0/16") || !strings.Contains(out, "fd00:ec2::254/128") {
				t.Errorf("NetworkPolicy as stored: %q %v", out, err)
			}
			// An upgrade keeps the certificates the guard put in its Secret.
			secret := release + "-webhook-tls"
			if out, err := kubectl("patch", "secret", secret, "-n", ns, "-p", `{"data":{"ca.crt":"Q0E="}}`); err != nil {
				t.Fatalf("fill the certificate secret: %v %s", err, out)
			}
			up := []string{"upgrade", release, chartDir(t), "--namespace", ns, "--set", "replicas=4", "--set", "webhook.timeoutSeconds=7"}
			if v.values != "" {
				up = append(up, "--values", v.values)
			}
			helm(t, cluster.AdminKubeconfig, up...)
			if out, err := kubectl("get", "secret", secret, "-n", ns, "-o", `jsonpath={.data.ca\.crt}`); err != nil || out != "Q0E=" {
				t.Errorf("helm upgrade replaced the certificates: %q %v", out, err)
			}
			if out, err := kubectl("get", "deployment", release, "-n", ns, "-o", "jsonpath={.spec.replicas}"); err != nil || out != "4" {
				t.Errorf("upgrade not applied: replicas %q %v", out, err)
			}
			if out, err := kubectl("get", "deployment", release, "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].args}"); err != nil || !strings.Contains(out, "--webhook-timeout=7s") {
				t.Errorf("upgrade not applied to the guard's flags: %q %v", out, err)
			}
			helm(t, cluster.AdminKubeconfig, "uninstall", release, "--namespace", ns)
			for _, o := range objs {
				get := []string{"get", resourceOf(o), o.GetName()}
				if o.GetNamespace() != "" {
					get = append(get, "-n", o.GetNamespace())
				}
				if out, err := kubectl(get...); err == nil {
					t.Errorf("%s %s left after uninstall: %s", o.GetKind(), o.GetName(), out)
				}
			}
			// Helm keeps the CRD (crds/), so Guards are never deleted with it.
			if _, err := kubectl("get", "crd", "guards.driftguard.io"); err != nil {
				t.Errorf("CRD gone after uninstall: %v", err)
			}
		})
	}
}

// resourceOf names an object's kind for kubectl get: kind.group.
func resourceOf(o *unstructured.Unstructured) string {
	if g := o.GroupVersionKind().Group; g != "" {
		return strings.ToLower(o.GetKind()) + "." + g
	}
	return strings.ToLower(o.GetKind())
}

func appVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}

// decode splits rendered manifests into objects.
func decode(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode rendered manifests: %v", err)
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if u == nil {
		t.Fatal("object not rendered")
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatal(err)
	}
}
