package promrules

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/driftguard/driftguard/test/wait"
)

// step is the scrape interval the stored samples are spaced by: each real
// scrape of the guard becomes one sample per series, step after the one
// before, so that minutes of alert time pass in seconds of test.
const step = 15 * time.Second

// scraper reads the guard's metrics endpoint every period until stopped.
type scraper struct {
	mu     sync.Mutex
	bodies [][]byte
	errs   []error
	stop   chan struct{}
	done   chan struct{}
}

func startScraper(period time.Duration) *scraper {
	s := &scraper{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			s.scrapeOnce()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *scraper) scrapeOnce() {
	body, err := scrape()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs = append(s.errs, err)
		return
	}
	s.bodies = append(s.bodies, body)
}

// scrapes waits until at least n scrapes were taken since the call.
func (s *scraper) scrapes(t *testing.T, n int) {
	t.Helper()
	s.mu.Lock()
	want := len(s.bodies) + n
	s.mu.Unlock()
	wait.Eventually(t, time.Duration(n)*10*time.Second, fmt.Sprintf("%d more scrapes", n), func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.bodies) < want {
			return fmt.Errorf("%d scrapes of %d (errors: %v)", len(s.bodies), want, s.errs)
		}
		return nil
	})
}

func (s *scraper) finish() [][]byte {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies
}

func scrape() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", metricsURL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("read scrape: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s: %s", metricsURL, resp.Status, body)
	}
	return body, nil
}

// families parses one exposition in the text format.
func families(body []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse exposition: %w", err)
	}
	return mfs, nil
}

// target labels as Prometheus adds them to what it scrapes.
var target = map[string]string{"job": "driftguard", "instance": "driftguard-0:8080"}

// store appends each exposition to st, the i-th at start + i*step.
func store(st storage.Appendable, bodies [][]byte, start time.Time) error {
	for i, body := range bodies {
		if err := storeAt(st, body, start.Add(time.Duration(i)*step)); err != nil {
			return fmt.Errorf("scrape %d: %w", i, err)
		}
	}
	return nil
}

func storeAt(st storage.Appendable, body []byte, at time.Time) error {
	mfs, err := families(body)
	if err != nil {
		return err
	}
	app := st.Appender(context.Background())
	ts := at.UnixMilli()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, smp := range samples(mf, m) {
				if _, err := app.Append(0, smp.labels, ts, smp.value); err != nil {
					_ = app.Rollback()
					return fmt.Errorf("append %s: %w", smp.labels, err)
				}
			}
		}
	}
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit samples: %w", err)
	}
	return nil
}

type sample struct {
	labels labels.Labels
	value  float64
}

// samples are the series one metric of a family gives, as a scrape by
// Prometheus stores them (histograms as _bucket, _sum and _count).
func samples(mf *dto.MetricFamily, m *dto.Metric) []sample {
	name := mf.GetName()
	base := map[string]string{}
	for k, v := range target {
		base[k] = v
	}
	for _, lp := range m.GetLabel() {
		base[lp.GetName()] = lp.GetValue()
	}
	mk := func(suffix string, v float64, extra ...string) sample {
		l := map[string]string{}
		for k, val := range base {
			l[k] = val
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		l[labels.MetricName] = name + suffix
		return sample{labels.FromMap(l), v}
	}
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return []sample{mk("", m.GetCounter().GetValue())}
	case dto.MetricType_GAUGE:
		return []sample{mk("", m.GetGauge().GetValue())}
	case dto.MetricType_HISTOGRAM:
		hist := m.GetHistogram()
		out := []sample{mk("_sum", hist.GetSampleSum()), mk("_count", float64(hist.GetSampleCount()))}
		inf := false
		for _, b := range hist.GetBucket() {
			inf = inf || math.IsInf(b.GetUpperBound(), 1)
			out = append(out, mk("_bucket", float64(b.GetCumulativeCount()), "le", formatLe(b.GetUpperBound())))
		}
		if !inf {
			out = append(out, mk("_bucket", float64(hist.GetSampleCount()), "le", "+Inf"))
		}
		return out
	case dto.MetricType_SUMMARY:
		sum := m.GetSummary()
		out := []sample{mk("_sum", sum.GetSampleSum()), mk("_count", float64(sum.GetSampleCount()))}
		for _, q := range sum.GetQuantile() {
			out = append(out, mk("", q.GetValue(), "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)))
		}
		return out
	default:
		return []sample{mk("", m.GetUntyped().GetValue())}
	}
}

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// names lists the metric families of an exposition, sorted.
func names(mfs map[string]*dto.MetricFamily) []string {
	out := make([]string, 0, len(mfs))
	for n := range mfs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func bufioReader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }
