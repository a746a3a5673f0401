// Command benchrun is `make bench` and `make bench-quick`: it builds the
// benchmarks, runs the unit benchmarks and every end-to-end benchmark of
// test/bench (each group in a process of its own, on a real API server and
// Git server on loopback), prints one line per figure against its target
// and writes them all to bench/results.json.
//
//	go run ./test/bench/cmd/benchrun [-quick | -long] [-out bench/results.json] [-strict]
//
// It exits 1 when a benchmark could not run (a setup failure), and with
// -strict also when a figure misses its target.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/driftguard/driftguard/test/bench/report"
)

// group is a set of end-to-end benchmarks run in one process.
type group struct {
	name    string
	pattern string
	timeout time.Duration
	// long groups take more than make bench's 15 minutes at full size:
	// they run with -long (make bench-scale), and at -quick size with
	// -quick.
	long bool
}

var groups = []group{
	// One control plane and guard process for all of these.
	{"shared", "^(BenchmarkColdStart|BenchmarkSelfHeal|BenchmarkSelfHealBurst|BenchmarkWebhookOverhead|BenchmarkApplyVsKubectl)$", 15 * time.Minute, false},
	// No control plane: the webhook server alone, Git and the other sources.
	{"webhook and git", "^(BenchmarkWebhookHandler|BenchmarkWebhookHTTPS|BenchmarkGitNoopFetch|BenchmarkSourceNoOp)$", 5 * time.Minute, false},
	// A control plane of its own: 100, 1,000, 10,000 objects.
	{"scale", "^BenchmarkScale$", 20 * time.Minute, false},
	// A control plane of its own: --admission-mode=both.
	{"compiled admission", "^BenchmarkCompiledAdmission$", 10 * time.Minute, false},
	// No control plane: 1,000 commits pushed to the Git server and fetched.
	{"git cache", "^BenchmarkGitCacheSize$", 20 * time.Minute, true},
	// A control plane of its own: 1,000 Guards of 4 objects (Flux's shape).
	{"fleet", "^BenchmarkManyGuards$", 30 * time.Minute, true},
	// A control plane of its own: 100,000 objects over 10 Guards (10,000
	// with -quick), after 1,000 in the same shape.
	{"many objects", "^BenchmarkManyObjects$", 90 * time.Minute, true},
	// A control plane of its own: two guard processes (--shard a, b)
	// splitting 1,000 Guards, webhooks on.
	{"shards", "^BenchmarkShards$", 30 * time.Minute, true},
}

// unit are the packages whose Go benchmarks run with -benchmem.
var unit = []string{"./drift/", "./policy/", "./webhook/"}

func main() {
	quick := flag.Bool("quick", false, "the smaller version of every benchmark (make bench-quick)")
	long := flag.Bool("long", false, "only the groups that take longer than make bench's 15 minutes, at full size (make bench-scale)")
	out := flag.String("out", "bench/results.json", "where the figures go, as JSON")
	strict := flag.Bool("strict", false, "exit 1 when a figure misses its target")
	flag.Parse()
	if err := run(*quick, *long, *out, *strict); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

// results is bench/results.json.
type results struct {
	Started  time.Time       `json:"started"`
	Duration string          `json:"duration"`
	Quick    bool            `json:"quick"`
	Go       string          `json:"go"`
	CPUs     int             `json:"cpus"`
	Load     []string        `json:"loadAverage"` // at the start and at the end
	Figures  []report.Figure `json:"figures"`
	Failures []string        `json:"failures,omitempty"` // benchmarks that could not run
}

func run(quick, long bool, out string, strict bool) error {
	started := time.Now()
	res := results{Started: started.UTC(), Quick: quick, Go: runtime.Version(), CPUs: runtime.NumCPU(), Load: []string{loadAvg()}}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root, out)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	figuresFile := strings.TrimSuffix(out, ".json") + ".jsonl"
	if err := os.Remove(figuresFile); err != nil && !os.IsNotExist(err) {
		return err
	}

	// 1. Build the end-to-end benchmarks once.
	testBin := filepath.Join(root, "bin", "bench.test")
	if err := step(root, nil, os.Stdout, "go", "test", "-c", "-o", testBin, "./test/bench/"); err != nil {
		return fmt.Errorf("build the benchmarks: %w", err)
	}

	// 2. Unit benchmarks: drift.Compare ns/op and allocs/op (and the
	// policy and webhook ones for the record).
	pkgs, benchtime := unit, "1s"
	if quick {
		pkgs, benchtime = unit[:1], "300ms"
	}
	var unitFigures []report.Figure
	if !long {
		var unitOut bytes.Buffer
		args := append([]string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", benchtime}, pkgs...)
		if err := step(root, nil, io.MultiWriter(os.Stdout, &unitOut), "go", args...); err != nil {
			res.Failures = append(res.Failures, "unit benchmarks: "+err.Error())
		}
		if unitFigures, err = compareFigures(&unitOut); err != nil {
			res.Failures = append(res.Failures, err.Error())
		}
	}

	// 3. End-to-end groups, each in a process of its own.
	env := []string{"DRIFTGUARD_BENCH_RESULTS=" + figuresFile}
	for _, g := range groups {
		if g.long != long && !quick {
			continue
		}
		fmt.Printf("\n=== benchrun: %s (%s)\n", g.name, g.pattern)
		args := []string{"-test.run", "^$", "-test.bench", g.pattern, "-test.benchtime", "1x", "-test.timeout", g.timeout.String()}
		if quick {
			args = append(args, "-quick")
		}
		if err := step(filepath.Join(root, "test", "bench"), env, os.Stdout, testBin, args...); err != nil {
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %v", g.name, err))
		}
	}

	// 4. Summary and results.json.
	figs, err := report.ReadFigures(figuresFile)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	res.Figures = append(unitFigures, figs...)
	res.Load = append(res.Load, loadAvg())
	res.Duration = time.Since(started).Round(time.Second).String()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // targets read "<=", not "\u003c="
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	_ = os.Remove(figuresFile)

	fmt.Printf("\n=== benchrun summary (%s, quick=%v, %d CPUs, load average %s at the start, %s at the end; %s)\n",
		res.Duration, quick, res.CPUs, res.Load[0], res.Load[1], out)
	failed := 0
	for _, f := range res.Figures {
		fmt.Println(f.Line())
		if !f.Pass {
			failed++
		}
	}
	fmt.Printf("%d figures, %d PASS, %d FAIL\n", len(res.Figures), len(res.Figures)-failed, failed)
	for _, f := range res.Failures {
		fmt.Println("benchmark did not complete:", f)
	}
	if len(res.Failures) > 0 {
		return fmt.Errorf("%d benchmark groups did not complete", len(res.Failures))
	}
	if strict && failed > 0 {
		return fmt.Errorf("%d figures miss their target", failed)
	}
	return nil
}

// compareFigures turns BenchmarkCompareDeployment of the drift package into
// the drift.Compare figures.
func compareFigures(r io.Reader) ([]report.Figure, error) {
	results, err := report.ParseGoBench(r)
	if err != nil {
		return nil, err
	}
	for _, b := range results {
		if b.Name != "BenchmarkCompareDeployment" {
			continue
		}
		note := "drift.Compare of a typical Deployment (BenchmarkCompareDeployment, -benchmem)"
		ns := report.NewFigure("drift_compare_deployment", b.Metrics["ns/op"], "ns/op", report.Below, 20000)
		allocs := report.NewFigure("drift_compare_deployment_allocs", b.Metrics["allocs/op"], "allocs/op", report.Below, 20)
		ns.Benchmark, allocs.Benchmark, ns.Note, allocs.Note = b.Name, b.Name, note, note
		for _, f := range []report.Figure{ns, allocs} {
			fmt.Println(f.Line())
		}
		return []report.Figure{ns, allocs}, nil
	}
	return nil, fmt.Errorf("no BenchmarkCompareDeployment result in the unit benchmarks' output")
}

// step runs a command in dir with env added, its output to w and stderr.
func step(dir string, env []string, w io.Writer, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the driftguard module")
	}
	return filepath.Dir(mod), nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
