package devenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// stopGrace is how long a child gets between SIGTERM and SIGKILL.
const stopGrace = 5 * time.Second

// child is a process devenv started: kube-controller-manager, kube-scheduler
// or KWOK. It runs in its own process group and gets SIGKILL when the thread
// that started it goes away, so it dies with the parent even on a crash.
type child struct {
	name    string
	pid     int
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// startChild starts path with args, its output appended to logFile.
//
// Pdeathsig fires when the OS thread that forked the child exits, not the
// process. The goroutine that starts the child therefore locks its thread and
// keeps it until the child has exited (it sits in Wait), so the Go runtime
// never retires that thread under a live child.
func startChild(name, path string, args []string, logFile *os.File, logPath string) (*child, error) {
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c := &child{name: name, logPath: logPath, cmd: cmd, done: make(chan struct{})}

	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: when this goroutine returns the thread exits too,
		// which is fine because the child is gone by then.
		if err := cmd.Start(); err != nil {
			started <- err
			close(c.done)
			return
		}
		c.pid = cmd.Process.Pid
		started <- nil
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("devenv: starting %s: %w", name, err)
	}
	return c, nil
}

// exited reports whether the process has exited, with how.
func (c *child) exited() (bool, error) {
	select {
	case <-c.done:
		if c.waitErr == nil {
			return true, fmt.Errorf("%s exited (log: %s)", c.name, c.logPath)
		}
		return true, fmt.Errorf("%s exited: %w (log: %s)", c.name, c.waitErr, c.logPath)
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the child's process group, then SIGKILL after grace,
// and waits until the child is reaped.
func (c *child) stop(grace time.Duration) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	if err := syscall.Kill(-c.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("devenv: sending SIGTERM to %s (pid %d): %w", c.name, c.pid, err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	if err := syscall.Kill(-c.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("devenv: sending SIGKILL to %s (pid %d): %w", c.name, c.pid, err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("devenv: %s (pid %d) did not exit after SIGKILL", c.name, c.pid)
	}
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. All listeners are held until the end so the ports differ.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("devenv: finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
