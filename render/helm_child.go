package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// A Helm chart is rendered in a child process: the guard's own binary
// (os.Executable) started again with helmChildEnv set, which this
// package's init notices before anything else runs. Helm's template
// engine has no way to stop a template (text/template takes no context)
// nor to bound what it allocates, so a chart whose templates loop,
// recurse or build strings without end would take the guard's CPU and
// memory, and with them every Guard. In a child, the time is bounded by
// killing it, the memory by its own watchdog (and GOMAXPROCS=1 bounds the
// CPU), the output by what the guard reads of it, and a crash of Helm
// (a fatal error, not only a panic) is an error of this chart's render.
// The child gets the chart's files and values on stdin and writes the
// rendered manifests (or the chart's problems) on stdout; its environment
// holds nothing but its own settings.

const (
	helmChildEnv       = "DRIFTGUARD_RENDER_CHILD"
	helmChildMemoryEnv = "DRIFTGUARD_RENDER_CHILD_MEMORY"
	helmChildValue     = "helm"
	// helmChildMemoryExit is the exit status of a child over its memory.
	helmChildMemoryExit = 3
	// helmChildStack bounds the stack of one goroutine of the child
	// (deep template recursion).
	helmChildStack = 64 << 20
)

func init() {
	if os.Getenv(helmChildEnv) == helmChildValue {
		os.Exit(helmChildMain(os.Stdin, os.Stdout, os.Stderr))
	}
}

// helmJob is what the child renders: the chart's files (names relative
// to the chart folder Dir, a repository path) and the release.
type helmJob struct {
	Dir         string          `json:"dir"`
	Files       []helmFile      `json:"files"`
	ValuesFiles []helmFile      `json:"valuesFiles"` // names are repository paths
	Values      json.RawMessage `json:"values,omitempty"`
	// ValuesFrom are the values of spec.helm.valuesFrom, JSON objects
	// merged in order between the values files and Values.
	ValuesFrom []json.RawMessage `json:"valuesFrom,omitempty"`
	// Capabilities are the cluster's; nil: Helm's defaults.
	Capabilities   *Capabilities `json:"capabilities,omitempty"`
	Release        string        `json:"release"`
	Namespace      string        `json:"namespace"`
	MaxOutputBytes int64         `json:"maxOutputBytes"`
}

type helmFile struct {
	Name string `json:"name"`
	Data []byte `json:"data"`
}

type helmManifest struct {
	Name    string `json:"name"` // helm's name: chart/templates/x.yaml
	Content string `json:"content"`
}

// helmResult is what the child answers: the CRDs (crds/ files), the
// manifests (templates, then hooks other than tests, in install order), or
// the chart's problems.
type helmResult struct {
	CRDs      []helmFile     `json:"crds,omitempty"`
	Manifests []helmManifest `json:"manifests,omitempty"`
	Problems  []helmProblem  `json:"problems,omitempty"`
}

// helmProblem is a *RenderError crossing the process boundary.
type helmProblem struct {
	Path  string      `json:"path"`
	Line  int         `json:"line,omitempty"`
	Msg   string      `json:"msg"`
	Limit *LimitError `json:"limit,omitempty"`
}

func problemOf(dir string, err error) helmProblem {
	p := helmProblem{Path: path.Join(dir, chartFile), Msg: err.Error()}
	var re *RenderError
	if errors.As(err, &re) {
		p.Path, p.Line, p.Msg = re.Path, re.Line, re.Err.Error()
	}
	var le *LimitError
	if errors.As(err, &le) {
		p.Limit = le
	}
	return p
}

func (p helmProblem) renderError() *RenderError {
	if p.Limit != nil {
		return &RenderError{Path: p.Path, Line: p.Line, Err: p.Limit}
	}
	return &RenderError{Path: p.Path, Line: p.Line, Err: errors.New(p.Msg)}
}

func helmOutputError(max int64) error {
	return &LimitError{What: fmt.Sprintf("the chart renders more than %s of manifests", SizeText(max)), Flag: flagHelmMaxOutput, Value: SizeText(max)}
}

// helmExecutable is the program the child runs: this one.
var helmExecutable = os.Executable

// helmSlot lets one chart render at a time: each child may use
// HelmMaxMemoryBytes besides the guard's own memory.
var helmSlot = make(chan struct{}, 1)

// runHelm renders job in a child process within the limits. An error is
// the child's: the time or memory limit (a *LimitError), or a crash.
func runHelm(job *helmJob, lim Limits) (*helmResult, error) {
	in, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	exe, err := helmExecutable()
	if err != nil {
		return nil, &helmStartError{err}
	}
	helmSlot <- struct{}{}
	defer func() { <-helmSlot }()

	ctx, cancel := context.WithTimeout(context.Background(), lim.HelmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = []string{
		helmChildEnv + "=" + helmChildValue,
		helmChildMemoryEnv + "=" + strconv.FormatInt(lim.HelmMaxMemoryBytes, 10),
		"GOMAXPROCS=1",
		"GOTRACEBACK=single",
	}
	// A guard built with the race detector (its tests) starts a child
	// built with it too, which follows the guard's race settings (make
	// test's GORACE=atexit_sleep_ms=0 spares a second per chart).
	if v, ok := os.LookupEnv("GORACE"); ok {
		cmd.Env = append(cmd.Env, "GORACE="+v)
	}
	cmd.Stdin = bytes.NewReader(in)
	// The answer is the manifests in JSON: at most twice their size, and
	// the CRDs, which the chart's size bounds.
	stdout := &cappedBuffer{max: 2*lim.HelmMaxOutputBytes + 2*int64(len(in)) + 1<<20, overflow: cancel}
	stderr := &cappedBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, &helmStartError{err}
	}
	runErr := cmd.Wait()
	switch {
	case stdout.over:
		return nil, helmOutputError(lim.HelmMaxOutputBytes)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, &LimitError{What: fmt.Sprintf("the chart took longer than %s to render", lim.HelmTimeout), Flag: flagHelmTimeout, Value: lim.HelmTimeout.String()}
	case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == helmChildMemoryExit:
		return nil, &LimitError{What: fmt.Sprintf("rendering the chart took more than %s of memory", SizeText(lim.HelmMaxMemoryBytes)), Flag: flagHelmMaxMemory, Value: SizeText(lim.HelmMaxMemoryBytes)}
	case runErr != nil:
		return nil, fmt.Errorf("the process rendering the chart failed (%v)%s", runErr, crashReason(stderr.String()))
	}
	var res helmResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return nil, fmt.Errorf("rendering the chart failed: unreadable answer: %w", err)
	}
	return &res, nil
}

// helmStartError is a child that could not be started (no executable,
// no process left): a failure of the guard's machine, not of the chart, so
// the render is tried again rather than failed for the revision.
type helmStartError struct{ err error }

func (e *helmStartError) Error() string {
	return "start the process that renders the chart: " + e.err.Error()
}

func (e *helmStartError) Unwrap() error { return e.err }

// crashReason picks the Go runtime's reason out of a crashed child's
// stderr ("fatal error: stack overflow", "panic: ...").
func crashReason(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for _, prefix := range []string{"fatal error: ", "panic: ", "runtime: ", "driftguard: "} {
		for _, line := range lines {
			if strings.HasPrefix(line, prefix) {
				return ": " + line
			}
		}
	}
	return ""
}

// cappedBuffer keeps what is written up to max bytes; beyond, it calls
// overflow and fails the write.
type cappedBuffer struct {
	bytes.Buffer
	max      int64
	over     bool
	overflow func()
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if int64(b.Len()+len(p)) > b.max {
		if !b.over && b.overflow != nil {
			b.overflow()
		}
		b.over = true
		if b.overflow == nil {
			return len(p), nil // stderr: the first bytes are enough
		}
		return 0, errors.New("too much output")
	}
	return b.Buffer.Write(p)
}

// helmChildMain is the child: it reads a helmJob from in, renders it and
// writes the helmResult to out; its exit status is helmChildMemoryExit
// when it went beyond its memory.
func helmChildMain(in io.Reader, out, errOut io.Writer) int {
	limit, _ := strconv.ParseInt(os.Getenv(helmChildMemoryEnv), 10, 64)
	if limit <= 0 {
		limit = DefaultLimits().HelmMaxMemoryBytes
	}
	debug.SetMaxStack(helmChildStack)
	debug.SetMemoryLimit(limit / 10 * 9) // the collector works harder before the watchdog ends it
	// If the node runs out of memory, this process goes first.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	go watchMemory(limit, errOut)

	var job helmJob
	if err := json.NewDecoder(in).Decode(&job); err != nil {
		fmt.Fprintln(errOut, "driftguard: read the chart:", err)
		return 2
	}
	res := renderChart(&job)
	if err := json.NewEncoder(out).Encode(res); err != nil {
		fmt.Fprintln(errOut, "driftguard: write the manifests:", err)
		return 2
	}
	return 0
}

// watchMemory ends the process with helmChildMemoryExit once the memory
// the Go runtime holds from the system goes beyond limit.
func watchMemory(limit int64, errOut io.Writer) {
	samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	for {
		metrics.Read(samples)
		if used := int64(samples[0].Value.Uint64()) - int64(samples[1].Value.Uint64()); used > limit {
			fmt.Fprintf(errOut, "driftguard: the chart's render holds %d bytes, more than %d\n", used, limit)
			os.Exit(helmChildMemoryExit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
