package devenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// guard kills envtest's etcd and kube-apiserver if this process dies without
// calling Stop. envtest starts them without Pdeathsig, so they would outlive
// a crashed test binary. The guard is a shell reading its stdin, a pipe only
// this process holds: when this process dies the read ends and the shell
// kills the given pids, waits (at most five seconds) for them to go, and
// removes the given folders: etcd's data and the certificates envtest made
// in the temporary folder, a quarter of a gigabyte a cluster, which Stop
// would have removed. On a normal Stop the guard is killed first.
type guard struct {
	cmd  *exec.Cmd
	pipe *os.File
}

// guardScript is the guard: pids, then "--", then the folders to remove.
const guardScript = `read -r _
pids=
while [ $# -gt 0 ] && [ "$1" != -- ]; do pids="$pids $1"; shift; done
[ $# -gt 0 ] && shift
kill -KILL $pids 2>/dev/null
for p in $pids; do
	n=0
	while kill -0 "$p" 2>/dev/null && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
done
rm -rf -- "$@"`

// startGuard watches the pids and, once they are killed, removes dirs. It
// returns nil (and no error) when there is nothing to watch.
func startGuard(pids []int, dirs []string) (*guard, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("devenv: creating the guard's pipe: %w", err)
	}
	args := []string{"-c", guardScript, "devenv-guard"}
	for _, p := range pids {
		args = append(args, strconv.Itoa(p))
	}
	args = append(append(args, "--"), dirs...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("devenv: starting the guard: %w", err)
	}
	_ = r.Close()
	return &guard{cmd: cmd, pipe: w}, nil
}

// stop kills the guard without letting it act, then reaps it.
func (g *guard) stop() {
	if g == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
	_ = g.pipe.Close()
}

// childPIDsMatching returns the pids of this process's children that run exe
// with an argument equal to arg.
func childPIDsMatching(exe, arg string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentPID(pid) != self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(string(bytes.TrimRight(cmdline, "\x00")), "\x00")
		if len(argv) == 0 || argv[0] != exe {
			continue
		}
		for _, a := range argv[1:] {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// parentPID reads the parent pid of pid from /proc, or -1.
func parentPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return ppid
}
