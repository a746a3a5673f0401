package promrules

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
)

var (
	chartDir  = filepath.Join("..", "..", "charts", "driftguard")
	rulesFile = filepath.Join(chartDir, "files", "prometheus", "rules.yaml")
)

// firing are the alerts the scenario must fire, with the value of the label
// that names what each is about.
var firing = map[string][2]string{
	"DriftguardGuardStalled":     {"guard", "obs-stalled"},
	"DriftguardSyncFailing":      {"guard", "obs-failing"},
	"DriftguardDriftNotReverted": {"guard", "obs-drift"},
	"DriftguardFightDetected":    {"guard", "obs-drift"},
	"DriftguardAuditSinkDown":    {"sink", "file"},
	"DriftguardWebhookErrors":    {"webhook", "validate"},
}

// quiet are the alerts the scenario gives no cause: they must not fire
// (the certificate's fires a year later, TestCertificateAlert).
var quiet = []string{"DriftguardAuditRecordsDropped", "DriftguardCertificateExpiresSoon"}

// TestAlertsAndDashboards scrapes the guard every quarter second while the
// scenario runs and for 110 scrapes after it, stores scrape i at
// start+i*15s, then evaluates every alerting rule at each of those times
// with Prometheus's rule evaluator, and every dashboard query over the
// whole range with its query engine; the last scrape is linted and, moved
// to three days before the certificate expires, fires its alert.
func TestAlertsAndDashboards(t *testing.T) {
	sc := startScraper(250 * time.Millisecond)
	scenario(t)
	sc.scrapes(t, 110) // 27 minutes of alert time: past every rule's `for`
	bodies := sc.finish()
	t.Logf("%d scrapes", len(bodies))
	last := bodies[len(bodies)-1]

	st := teststorage.New(t)
	end := time.Now().Truncate(step)
	start := end.Add(-time.Duration(len(bodies)-1) * step)
	if err := store(st, bodies, start); err != nil {
		t.Fatal(err)
	}
	engine := newEngine()

	t.Run("metric names", func(t *testing.T) { lint(t, last) })
	t.Run("alerts", func(t *testing.T) {
		groups := loadRules(t, engine, st)
		evaluate(groups, start, end)
		for name, rule := range alertingRules(groups) {
			selectorsReturnSeries(t, engine, st, name, rule.Query(), end)
			if want, ok := firing[name]; ok {
				if !firingFor(rule, want[0], want[1]) {
					t.Errorf("%s: not firing for %s=%q; active: %s", name, want[0], want[1], describe(rule))
				}
			} else if !slices.Contains(quiet, name) {
				t.Errorf("%s: the test neither fires it nor names it quiet", name)
			} else if len(rule.ActiveAlerts()) > 0 {
				t.Errorf("%s: active without cause: %s", name, describe(rule))
			}
		}
	})
	t.Run("dashboards", func(t *testing.T) { dashboardQueries(t, engine, st, start, end) })
	t.Run("certificate alert", func(t *testing.T) { certificateAlert(t, last) })
}

func newEngine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{
		Logger: slog.New(slog.DiscardHandler), MaxSamples: 50_000_000, Timeout: time.Minute,
		LookbackDelta: 5 * time.Minute,
	})
}

// loadRules loads the chart's rule file with the rule manager's own loader.
func loadRules(t *testing.T, engine *promql.Engine, st storage.Storage) map[string]*rules.Group {
	t.Helper()
	mgr := rules.NewManager(&rules.ManagerOptions{
		QueryFunc: rules.EngineQueryFunc(engine, st), Appendable: st, Queryable: st,
		Context: context.Background(), Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry(),
		// Alertmanager is not part of the test: the rules' state says what fires.
		NotifyFunc: func(context.Context, string, ...*rules.Alert) {},
	})
	groups, errs := mgr.LoadGroups(step, labels.EmptyLabels(), "", nil, false, rulesFile)
	if len(errs) > 0 {
		t.Fatalf("load %s: %v", rulesFile, errs)
	}
	if len(groups) == 0 {
		t.Fatalf("%s: no rule groups", rulesFile)
	}
	return groups
}

// evaluate runs every group at each step from start to end, as Prometheus
// does at its evaluation interval.
func evaluate(groups map[string]*rules.Group, start, end time.Time) {
	for ts := start; !ts.After(end); ts = ts.Add(step) {
		for _, g := range groups {
			g.Eval(context.Background(), ts)
		}
	}
}

func alertingRules(groups map[string]*rules.Group) map[string]*rules.AlertingRule {
	out := map[string]*rules.AlertingRule{}
	for _, g := range groups {
		for _, r := range g.AlertingRules() {
			out[r.Name()] = r
		}
	}
	return out
}

func firingFor(rule *rules.AlertingRule, label, value string) bool {
	for _, a := range rule.ActiveAlerts() {
		if a.State == rules.StateFiring && a.Labels.Get(label) == value {
			return true
		}
	}
	return false
}

func describe(rule *rules.AlertingRule) string {
	var out []string
	for _, a := range rule.ActiveAlerts() {
		out = append(out, fmt.Sprintf("%s %s (since %s)", a.State, a.Labels, a.ActiveAt.Format(time.TimeOnly)))
	}
	if rule.LastError() != nil {
		out = append(out, "error: "+rule.LastError().Error())
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// selectorsReturnSeries checks that every series selector of expr selects
// series of the scrape: no rule looks at a metric or label the guard does
// not expose.
func selectorsReturnSeries(t *testing.T, engine *promql.Engine, st storage.Queryable, name string, expr parser.Expr, at time.Time) {
	t.Helper()
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		sel := (&parser.VectorSelector{Name: vs.Name, LabelMatchers: vs.LabelMatchers}).String()
		q, err := engine.NewRangeQuery(context.Background(), st, nil, sel, at.Add(-30*time.Minute), at, step)
		if err != nil {
			t.Errorf("%s: %s: %v", name, sel, err)
			return nil
		}
		defer q.Close()
		res := q.Exec(context.Background())
		if res.Err != nil {
			t.Errorf("%s: %s: %v", name, sel, res.Err)
			return nil
		}
		if m, _ := res.Matrix(); len(m) == 0 {
			t.Errorf("%s: %s selects no series of the guard's metrics", name, sel)
		}
		return nil
	})
}

// Grafana's variables, as Grafana sets them for a 15 s scrape interval.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "15s", "$__range", "30m")

type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// dashboardQueries runs every query of every dashboard over the scrape's
// time range: each must give at least one series with a value.
func dashboardQueries(t *testing.T, engine *promql.Engine, st storage.Queryable, start, end time.Time) {
	files, err := filepath.Glob(filepath.Join(chartDir, "files", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in the chart: %v", err)
	}
	queries := 0
	for _, f := range files {
		d := readDashboard(t, f)
		for _, p := range d.Panels {
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", d.Title, p.Title)
			}
			for _, target := range p.Targets {
				queries++
				if err := hasValues(engine, st, grafanaVars.Replace(target.Expr), start, end); err != nil {
					t.Errorf("%s / %s: %v", d.Title, p.Title, err)
				}
			}
		}
	}
	t.Logf("%d queries of %d dashboards", queries, len(files))
}

func readDashboard(t *testing.T, path string) dashboard {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return d
}

func hasValues(engine *promql.Engine, st storage.Queryable, expr string, start, end time.Time) error {
	q, err := engine.NewRangeQuery(context.Background(), st, nil, expr, start, end, step)
	if err != nil {
		return fmt.Errorf("%s: %w", expr, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		return fmt.Errorf("%s: %w", expr, res.Err)
	}
	m, err := res.Matrix()
	if err != nil {
		return fmt.Errorf("%s: %w", expr, err)
	}
	for _, s := range m {
		for _, p := range s.Floats {
			if !math.IsNaN(p.F) {
				return nil
			}
		}
	}
	return fmt.Errorf("%s: no series with a value (%d series)", expr, len(m))
}

// lint applies promtool's metric checks (promlint) to driftguard's own
// metrics; the problems of the libraries' metrics are only logged.
func lint(t *testing.T, body []byte) {
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "driftguard_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		} else {
			t.Logf("not ours: %s: %s", p.Metric, p.Text)
		}
	}
	mfs, err := families(body)
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, n := range names(mfs) {
		if strings.HasPrefix(n, "driftguard_") {
			ours = append(ours, n)
		}
	}
	t.Logf("driftguard's metrics: %s", strings.Join(ours, " "))
}
