package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// apiStopTimeout is how long kube-apiserver gets to shut down after SIGTERM
// (it drains requests in flight) before it gets SIGKILL.
const apiStopTimeout = 20 * time.Second

// StopAPIServer stops kube-apiserver as a restart of its host would: SIGTERM,
// SIGKILL after 20 s, and waits until it has exited. etcd keeps running.
// Clients see connection errors until StartAPIServer.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.stopped:
		return errors.New("devenv: StopAPIServer: the cluster is stopped")
	case c.apiDown:
		return errors.New("devenv: StopAPIServer: kube-apiserver is already stopped")
	case c.api != nil:
		if err := c.api.stop(apiStopTimeout); err != nil {
			return err
		}
		c.api = nil
	case c.apiPID == 0 || len(c.apiArgv) == 0:
		return errors.New("devenv: StopAPIServer: envtest's kube-apiserver process was not found at start-up")
	default:
		// envtest's process: envtest reaps it; wait until it is gone.
		if err := stopPID(c.apiPID, apiStopTimeout); err != nil {
			return err
		}
	}
	c.apiDown = true
	c.log.Info("kube-apiserver stopped")
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// command line it had: the same etcd (so the same objects), port,
// certificates and users. It returns once the server answers /readyz.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	if c.stopped || !c.apiDown {
		c.mu.Unlock()
		return errors.New("devenv: StartAPIServer: kube-apiserver was not stopped with StopAPIServer")
	}
	ch, err := startChild("kube-apiserver", c.apiArgv[0], c.apiArgv[1:], c.apiLog, c.logPath("kube-apiserver"))
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.api, c.apiDown = ch, false
	c.mu.Unlock()

	hc, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return fmt.Errorf("devenv: client for /readyz: %w", err)
	}
	ready := strings.TrimSuffix(c.Config.Host, "/") + "/readyz"
	deadline := time.Now().Add(60 * time.Second)
	for {
		if done, err := ch.exited(); done {
			return fmt.Errorf("devenv: kube-apiserver did not come back: %w", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ready, nil)
		if err != nil {
			return err
		}
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c.log.Info("kube-apiserver started again", "pid", ch.pid)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("devenv: kube-apiserver not ready within 60s after a restart (log %s)", c.logPath("kube-apiserver"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stopPID sends SIGTERM to a process another goroutine reaps, then SIGKILL
// after timeout, and waits until it is gone.
func stopPID(pid int, timeout time.Duration) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return fmt.Errorf("devenv: SIGTERM to pid %d: %w", pid, err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, 0} {
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if !alive(pid) {
				return nil
			}
		}
		if sig != 0 {
			_ = syscall.Kill(pid, sig)
		}
	}
	return fmt.Errorf("devenv: pid %d did not exit", pid)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// cmdline returns the argument vector of pid.
func cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
}
