package promrules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/devenv"
)

// helmTemplate renders the chart with the real helm binary.
func helmTemplate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := filepath.Abs(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(devenv.DefaultBinDir(), "helm"), append([]string{"template", "dg", dir, "--namespace", "driftguard-system"}, args...)...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// documents splits a rendering into its objects, by kind.
func documents(t *testing.T, out string) map[string][][]byte {
	t.Helper()
	docs := map[string][][]byte{}
	r := utilyaml.NewYAMLReader(bufioReader(out))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Kind != "" {
			docs[meta.Kind] = append(docs[meta.Kind], doc)
		}
	}
}

// TestChartRendersRulesAndDashboards: off by default; when enabled, the
// PrometheusRule decodes strictly into the Prometheus Operator's own API
// type (the one its CRD is generated from) and its groups pass
// Prometheus's rule file checks; each dashboard is a ConfigMap labelled
// for Grafana's sidecar holding the chart's file unchanged.
func TestChartRendersRulesAndDashboards(t *testing.T) {
	out, err := helmTemplate(t)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	if docs := documents(t, out); len(docs["PrometheusRule"]) != 0 || strings.Contains(out, "grafana_dashboard") {
		t.Fatal("the default values render a PrometheusRule or dashboards")
	}
	out, err = helmTemplate(t, "--set", "prometheusRule.enabled=true", "--set", "dashboards.enabled=true",
		"--set", "prometheusRule.labels.release=kps", "--set", "prometheusRule.alertLabels.team=platform",
		"--set", "prometheusRule.disabled={DriftguardDriftNotReverted}")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	docs := documents(t, out)
	checkPrometheusRule(t, docs["PrometheusRule"])
	checkDashboards(t, docs["ConfigMap"])

	if out, err := helmTemplate(t, "--set", "prometheusRule.enabled=true", "--set", "prometheusRule.disabled={NoSuchAlert}"); err == nil {
		t.Fatalf("the schema admits an unknown alert name in prometheusRule.disabled:\n%s", out)
	}
}

func checkPrometheusRule(t *testing.T, docs [][]byte) {
	t.Helper()
	if len(docs) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(docs))
	}
	var pr monitoringv1.PrometheusRule
	if err := yaml.UnmarshalStrict(docs[0], &pr); err != nil {
		t.Fatalf("the PrometheusRule does not fit the operator's type: %v\n%s", err, docs[0])
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Labels["release"] != "kps" {
		t.Errorf("apiVersion %q labels %v", pr.APIVersion, pr.Labels)
	}
	// The operator hands spec.groups to Prometheus as a rule file.
	file, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(file, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("the PrometheusRule's groups are no valid rule file: %v\n%s", errs, file)
	}
	var got []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			got = append(got, r.Alert)
			if r.Labels["team"] != "platform" || r.Labels["severity"] == "" {
				t.Errorf("%s: labels %v, want severity and team=platform", r.Alert, r.Labels)
			}
		}
	}
	src, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var want []string
	for _, g := range src.Groups {
		for _, r := range g.Rules {
			if r.Alert != "DriftguardDriftNotReverted" {
				want = append(want, r.Alert)
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("alerts %v, want %v (the chart's file less the disabled one)", got, want)
	}
}

func checkDashboards(t *testing.T, docs [][]byte) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "files", "dashboards", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, doc := range docs {
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Labels["grafana_dashboard"] == "" {
			continue
		}
		found++
		if cm.Labels["grafana_dashboard"] != "1" || cm.Namespace != "driftguard-system" || len(cm.Data) != 1 {
			t.Errorf("%s: labels %v namespace %q keys %d", cm.Name, cm.Labels, cm.Namespace, len(cm.Data))
		}
		for key, data := range cm.Data {
			want, err := os.ReadFile(filepath.Join(chartDir, "files", "dashboards", key))
			if err != nil {
				t.Errorf("%s: key %s is no dashboard of the chart: %v", cm.Name, key, err)
				continue
			}
			if data != strings.TrimRight(string(want), "\n") || !json.Valid([]byte(data)) {
				t.Errorf("%s: %s differs from the chart's file", cm.Name, key)
			}
		}
	}
	if found != len(files) || found == 0 {
		t.Errorf("%d dashboard ConfigMaps, want %d", found, len(files))
	}
}
