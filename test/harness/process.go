package harness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/driftguard/driftguard/test/wait"
)

// The guard binary is built once per test process.
var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary builds cmd/driftguard (once per test process, into a temporary
// folder) and returns the path of the binary; with DRIFTGUARD_TEST_BINARY
// set (make test builds it once for every suite) it returns that one.
func Binary() (string, error) {
	if p := os.Getenv("DRIFTGUARD_TEST_BINARY"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("DRIFTGUARD_TEST_BINARY: %w", err)
		}
		return p, nil
	}
	buildOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "driftguard-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "driftguard")
		// As the Makefile and the image build it: static, without cgo (a cgo
		// build links kustomize's plugin loader dynamically, with tens of MB
		// of symbol tables the benchmarks would count as resident memory).
		cmd := exec.Command("go", "build", "-trimpath", "-o", buildPath, "./cmd/driftguard")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/driftguard: %w\n%s", err, out)
		}
	})
	return buildPath, buildErr
}

// ModuleRoot returns the folder of go.mod above the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// ProcessOptions configure a guard process.
type ProcessOptions struct {
	// Binary is the driftguard binary (Binary() when empty).
	Binary string
	// Kubeconfig is the guard's identity.
	Kubeconfig string
	// Dir holds the guard's log (guard.log, appended to across restarts)
	// and its Git cache (gitcache, kept across restarts).
	Dir string
	// WebhookConfigName names the guard's webhook configurations.
	WebhookConfigName string
	// Args are further flags of `driftguard run`; they come after the
	// defaults, so they override them.
	Args []string
	// Stdout receives the audit records of the stdout sink.
	Stdout io.Writer
	// Env is added to the process environment.
	Env []string
}

// Process is `driftguard run` as a process of its own, on loopback, with its
// metrics, health and pprof endpoints on free ports.
type Process struct {
	PID          int
	Started      time.Time // just before the process was started
	LogPath      string
	MetricsAddr  string
	PprofAddr    string
	HealthAddr   string
	ReceiverAddr string // the push receiver (POST /hook)
	// ReceiverToken is the receiver's token (a receiver without one
	// refuses every push); NotifyPush sends it.
	ReceiverToken string

	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{}
	waitErr error
}

// StartProcess starts a guard process. It returns once the process runs;
// use WaitHealthy, or wait for what the test needs (the webhook
// configuration, a Guard's status).
func StartProcess(o ProcessOptions) (*Process, error) {
	if o.Binary == "" {
		bin, err := Binary()
		if err != nil {
			return nil, err
		}
		o.Binary = bin
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := loopbackAddrs(4)
	if err != nil {
		return nil, err
	}
	p := &Process{
		MetricsAddr: addrs[0], HealthAddr: addrs[1], PprofAddr: addrs[2], ReceiverAddr: addrs[3], ReceiverToken: RandomToken(),
		LogPath: filepath.Join(o.Dir, "guard.log"), done: make(chan struct{}),
	}
	if p.logFile, err = os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, err
	}
	name := o.WebhookConfigName
	if name == "" {
		name = "driftguard"
	}
	args := []string{"run", "--kubeconfig", o.Kubeconfig,
		"--webhook-addr", "127.0.0.1:0", "--metrics-addr", p.MetricsAddr, "--health-addr", p.HealthAddr,
		"--pprof-addr", p.PprofAddr, "--receiver-addr", p.ReceiverAddr,
		"--git-cache-dir", filepath.Join(o.Dir, "gitcache"), "--webhook-config-name", name}
	args = append(args, o.Args...)
	p.cmd = exec.Command(o.Binary, args...)
	p.cmd.Stdout = o.Stdout
	if p.cmd.Stdout == nil {
		p.cmd.Stdout = io.Discard
	}
	p.cmd.Stderr = p.logFile
	// The token goes in the environment, not on the command line (ps).
	p.cmd.Env = append(append(os.Environ(), "DRIFTGUARD_RECEIVER_TOKEN="+p.ReceiverToken), o.Env...)
	// Own process group (Kill reaches everything); SIGKILL when the thread
	// that started it goes away, so a crashed test leaves no guard behind.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the starting thread exits: keep it until the
		// process has exited.
		runtime.LockOSThread()
		p.Started = time.Now()
		if err := p.cmd.Start(); err != nil {
			started <- err
			close(p.done)
			return
		}
		p.PID = p.cmd.Process.Pid
		started <- nil
		p.waitErr = p.cmd.Wait()
		_ = p.logFile.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		_ = p.logFile.Close()
		return nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	return p, nil
}

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, fmt.Errorf("guard process %d exited: %v (log %s)", p.PID, p.waitErr, p.LogPath)
	default:
		return false, nil
	}
}

// Kill sends SIGKILL to the guard's process group and waits until it is gone.
func (p *Process) Kill() error {
	return p.signalAndWait(syscall.SIGKILL, 10*time.Second)
}

// Stop sends SIGTERM, and SIGKILL after 20 s, and waits until it is gone.
func (p *Process) Stop() error {
	if err := p.signalAndWait(syscall.SIGTERM, 20*time.Second); err == nil {
		return nil
	}
	return p.Kill()
}

func (p *Process) signalAndWait(sig syscall.Signal, wait time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := syscall.Kill(-p.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to guard %d: %w", sig, p.PID, err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("guard %d still runs %s after %v", p.PID, wait, sig)
	}
}

// WaitHealthy waits until the guard answers on /readyz.
func (p *Process) WaitHealthy(timeout time.Duration) error {
	err := wait.Until(timeout, func() error {
		if done, err := p.Exited(); done {
			return wait.Stop(err)
		}
		resp, err := http.Get("http://" + p.HealthAddr + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("guard %d not healthy within %s (log %s): %w", p.PID, timeout, p.LogPath, err)
	}
	return nil
}

// LogContains reports whether the guard's log holds substr.
func (p *Process) LogContains(substr string) bool {
	b, err := os.ReadFile(p.LogPath)
	return err == nil && bytes.Contains(b, []byte(substr))
}

// Mem returns the process's resident memory and its peak (VmRSS, VmHWM)
// in MiB, or zeros when /proc cannot be read.
func (p *Process) Mem() (rss, hwm float64) { return ProcMem(p.PID) }

// CPUSeconds returns the user and system CPU time the process used.
func (p *Process) CPUSeconds() float64 { return ProcCPUSeconds(p.PID) }

// Metric scrapes the guard's /metrics and returns the sum of the samples of
// name whose labels contain every one of labels (`sink="file"`).
func (p *Process) Metric(name string, labels ...string) (float64, error) {
	resp, err := http.Get("http://" + p.MetricsAddr + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("scrape guard metrics: %w", err)
	}
	defer resp.Body.Close()
	return sumMetric(resp.Body, name, labels)
}

func sumMetric(r io.Reader, name string, labels []string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	sum, found := 0.0, false
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		lbl, value := "", rest
		if strings.HasPrefix(rest, "{") {
			var ok bool
			lbl, value, ok = strings.Cut(rest[1:], "}")
			if !ok {
				continue
			}
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(","+lbl, ","+l) {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		sum, found = sum+v, true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("metric %s%v not exposed", name, labels)
	}
	return sum, nil
}

// HeapAfterGC has the guard collect garbage (its pprof heap endpoint with
// gc=1) and returns its heap in use afterwards, in MiB.
func (p *Process) HeapAfterGC() (float64, error) {
	resp, err := http.Get("http://" + p.PprofAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, fmt.Errorf("guard heap profile: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	v, err := p.Metric("go_memstats_heap_inuse_bytes")
	return v / (1 << 20), err
}

// SaveHeapProfile writes the guard's heap profile (after a GC) to path, for
// `go tool pprof`.
func (p *Process) SaveHeapProfile(path string) error {
	return p.saveProfile("heap?gc=1", path)
}

// StartCPUProfile has the guard profile its CPU for d (its pprof profile
// endpoint) and returns a wait that writes the profile to path once d has
// passed.
func (p *Process) StartCPUProfile(path string, d time.Duration) (wait func() error) {
	done := make(chan error, 1)
	go func() { done <- p.saveProfile(fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), path) }()
	return func() error { return <-done }
}

// saveProfile writes what the guard's pprof endpoint /debug/pprof/<query>
// answers to path.
func (p *Process) saveProfile(query, path string) error {
	resp, err := http.Get("http://" + p.PprofAddr + "/debug/pprof/" + query)
	if err != nil {
		return fmt.Errorf("guard profile %s: %w", query, err)
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// NotifyPush tells the guard's push receiver that the repository at url
// changed, as a Git host's webhook would.
func (p *Process) NotifyPush(ctx context.Context, url string) error {
	body := fmt.Appendf(nil, `{"url":%q}`, url)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.ReceiverAddr+"/hook", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Driftguard-Token", p.ReceiverToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("push notification: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("push notification: %s", resp.Status)
	}
	return nil
}

// clockTicks is sysconf(_SC_CLK_TCK) on Linux.
const clockTicks = 100

// ProcMem returns VmRSS and VmHWM of pid in MiB (0 when unreadable).
func ProcMem(pid int) (rss, hwm float64) {
	m := procStatusMiB(pid)
	return m["VmRSS"], m["VmHWM"]
}

// ProcRSSParts returns the anonymous and the file-backed part of pid's
// resident set in MiB (0, 0 when unreadable): memory the process owns, and
// pages of its binary (and other files) the kernel has mapped for it, which
// are page cache shared with every process that maps the file.
func ProcRSSParts(pid int) (anon, file float64) {
	m := procStatusMiB(pid)
	return m["RssAnon"], m["RssFile"]
}

// procStatusMiB returns the kB figures of /proc/PID/status in MiB, by name.
func procStatusMiB(pid int) map[string]float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	m := map[string]float64{}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			m[strings.TrimSuffix(f[0], ":")] = kb / 1024
		}
	}
	return m
}

// ProcCPUSeconds returns the user and system CPU time pid used (0 when
// unreadable).
func ProcCPUSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …: comm may hold spaces, so split after the last ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15
	return float64(ut+st) / clockTicks
}

// loopbackAddrs returns n distinct free 127.0.0.1 addresses.
func loopbackAddrs(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().String())
	}
	return out, nil
}
