package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/test/harness"
	"github.com/driftguard/driftguard/test/wait"
)

// startShard runs the driftguard binary for one shard against
// the harness's API server, without a webhook; it returns its metrics URL
// and its stdout (audit records).
func startShard(t *testing.T, shard string) (metricsURL string, out *harness.Buffer) {
	t.Helper()
	dir := t.TempDir()
	bin, err := harness.Binary()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, _, err := h.Cluster.AddUser("driftguard-shard-"+shard, []string{"system:masters"})
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	out = &harness.Buffer{}
	logs, err := os.Create(filepath.Join(dir, "shard.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--kubeconfig", kubeconfig, "--shard", shard,
		"--webhook-register=false", "--webhook-addr", "127.0.0.1:0", "--receiver-addr", "",
		"--metrics-addr", metricsAddr, "--health-addr", "0", "--git-cache-dir", filepath.Join(dir, "git"),
		"--default-interval", "2s")
	cmd.Stdout, cmd.Stderr = out, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("shard %s log:\n%s", shard, b)
		}
	})
	return "http://" + metricsAddr + "/metrics", out
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestShards: a Guard labelled with a shard is reconciled by that shard's
// process only, an unlabelled one by the unsharded process only; the
// shard's metrics show its Guard.
func TestShards(t *testing.T) {
	t.Parallel()
	metricsURL, shardOut := startShard(t, "b")
	sharded := h.NewLabelledGuard(t, "shard-b", map[string]string{"driftguard.io/shard": "b"}, true,
		map[string]string{"ns.yaml": namespace("shard-b"), "cm.yaml": configMap("shard-b", "cm", "b")})
	plain := h.NewGuard(t, "shard-none", true, map[string]string{"ns.yaml": namespace("shard-none"), "cm.yaml": configMap("shard-none", "cm", "none")})
	h.WaitApplied(t, sharded.Guard, sharded.Initial)
	h.WaitApplied(t, plain.Guard, plain.Initial)
	waitValue(t, "shard-b", "cm", "b")

	// Who applied what: each process's audit records.
	if recs := h.Audit.Find(func(r audit.Record) bool { return r.Guard == sharded.Guard && r.Type == audit.Apply }); len(recs) > 0 {
		t.Fatalf("the unsharded process worked on the shard's Guard: %+v", recs[0])
	}
	if !strings.Contains(shardOut.String(), `"type":"apply","guard":"shard-b"`) {
		t.Fatalf("the shard applied nothing of its Guard:\n%s", shardOut.String())
	}
	if strings.Contains(shardOut.String(), `"guard":"shard-none"`) {
		t.Fatal("the shard worked on, or recorded, an unlabelled Guard")
	}

	wait.Eventually(t, 30*time.Second, "shard metrics", func() error {
		resp, err := http.Get(metricsURL)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, want := range []string{
			`driftguard_sync_total{guard="shard-b",result="success"}`,
			`driftguard_managed_objects{guard="shard-b"} 2`,
			`driftguard_guard_condition{guard="shard-b",status="True",type="Ready"} 1`,
			`driftguard_reconcile_duration_seconds_count{guard="shard-b"}`,
			`driftguard_git_fetch_duration_seconds_count`,
		} {
			if !bytes.Contains(body, []byte(want)) {
				return fmt.Errorf("no %s in the metrics", want)
			}
		}
		if bytes.Contains(body, []byte(`guard="shard-none"`)) {
			return fmt.Errorf("the shard reports a Guard of another shard")
		}
		return nil
	})
}
