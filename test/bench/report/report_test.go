package report

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	tests := []struct {
		f    Figure
		want string
	}{
		{NewFigure("selfheal_detect_p99", 9.24, "ms", AtMost, 20),
			"bench: selfheal_detect_p99 9.24 ms target <= 20 PASS"},
		{NewFigure("guard_rss_10000_objects", 237.49, "MiB", AtMost, 150),
			"bench: guard_rss_10000_objects 237 MiB target <= 150 FAIL"},
		{NewFigure("reconcile_1000_changed", 2.5, "s", AtMost, 4.5).WithBaseline(13.5, "s"),
			"bench: reconcile_1000_changed 2.5 s target <= 4.5 baseline 13.5 s PASS"},
		{NewFigure("drift_compare_deployment_allocs", 20, "allocs/op", Below, 20),
			"bench: drift_compare_deployment_allocs 20 allocs/op target < 20 FAIL"},
		{NewFigure("webhook_https_reviews_per_s", 2055.4, "reviews/s", AtLeast, 2000),
			"bench: webhook_https_reviews_per_s 2055 reviews/s target >= 2000 PASS"},
		{NewFigure("x", 0.000123, "s", Above, 0), "bench: x 0.000123 s target > 0 PASS"},
		{NewFigure("y", 12.345, "ms", ExactlyN, 12.345), "bench: y 12.3 ms target == 12.3 PASS"},
	}
	for _, tt := range tests {
		if got := tt.f.Line(); got != tt.want {
			t.Errorf("Line() = %q, want %q", got, tt.want)
		}
	}
}

func TestAppendAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "figures.jsonl")
	want := []Figure{
		NewFigure("a", 1, "ms", AtMost, 2),
		NewFigure("b", 3, "s", AtMost, 1).WithBaseline(9, "s"),
	}
	for _, f := range want {
		if err := AppendFigure(path, f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadFigures(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
}

func TestParseGoBench(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/driftguard/driftguard/drift
cpu: AMD EPYC
BenchmarkCompareDeployment-2          	  603021	      1993 ns/op	     256 B/op	       1 allocs/op
BenchmarkCompareDeploymentJQRule-2    	   74418	     16154 ns/op	   10096 B/op	      89 allocs/op
BenchmarkSelfHeal 	       1	         0 ns/op	        9.200 detect-p99-ms
PASS
ok  	github.com/driftguard/driftguard/drift	3.1s
`
	got, err := ParseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []GoBench{
		{Name: "BenchmarkCompareDeployment", N: 603021, Metrics: map[string]float64{"ns/op": 1993, "B/op": 256, "allocs/op": 1}},
		{Name: "BenchmarkCompareDeploymentJQRule", N: 74418, Metrics: map[string]float64{"ns/op": 16154, "B/op": 10096, "allocs/op": 89}},
		{Name: "BenchmarkSelfHeal", N: 1, Metrics: map[string]float64{"ns/op": 0, "detect-p99-ms": 9.2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseGoBench = %+v\nwant %+v", got, want)
	}
}
