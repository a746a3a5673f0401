package sourceserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// MinIO is a real MinIO server (the binary tools/build.sh builds) on
// loopback, behind a Front that logs the requests the guard makes. Tests
// write objects with Client, which talks to MinIO directly.
type MinIO struct {
	*Front
	AccessKey, SecretKey string
	Client               *minio.Client

	cmd  *exec.Cmd
	done chan struct{}
	dir  string
}

// StartMinIO starts MinIO with a fresh data folder.
func StartMinIO(bin string) (*MinIO, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("minio server: %w (build it with tools/build.sh)", err)
	}
	dir, err := os.MkdirTemp("", "sourceserver-minio-")
	if err != nil {
		return nil, err
	}
	m := &MinIO{AccessKey: "driftguard", SecretKey: "driftguard-secret-key", dir: dir, done: make(chan struct{})}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "minio.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	m.cmd = exec.Command(bin, "server", filepath.Join(dir, "data"), "--address", addr, "--quiet")
	m.cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+m.AccessKey, "MINIO_ROOT_PASSWORD="+m.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "HOME="+dir)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig follows the thread that forked: keep it until MinIO exits.
		runtime.LockOSThread()
		if err := m.cmd.Start(); err != nil {
			started <- err
			close(m.done)
			return
		}
		started <- nil
		_ = m.cmd.Wait()
		close(m.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start minio: %w", err)
	}
	if err := m.waitLive(addr, 90*time.Second); err != nil {
		m.Close()
		return nil, err
	}
	target := &url.URL{Scheme: "http", Host: addr}
	proxy := httputil.NewSingleHostReverseProxy(target) // keeps the Host header the client signed
	if m.Front, err = NewFront(proxy); err != nil {
		m.Close()
		return nil, err
	}
	m.Client, err = minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func (m *MinIO) waitLive(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-m.done:
			return fmt.Errorf("minio exited; see %s", filepath.Join(m.dir, "minio.log"))
		default:
		}
		resp, err := http.Get("http://" + addr + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("minio not live within %s; see %s", timeout, filepath.Join(m.dir, "minio.log"))
}

// Endpoint is the host:port the guard talks to (the Front).
func (m *MinIO) Endpoint() string { return m.Addr() }

// MakeBucket creates a bucket.
func (m *MinIO) MakeBucket(ctx context.Context, bucket string) error {
	return m.Client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: "us-east-1"})
}

// Put writes an object.
func (m *MinIO) Put(ctx context.Context, bucket, key, content string) error {
	_, err := m.Client.PutObject(ctx, bucket, key, bytes.NewReader([]byte(content)), int64(len(content)), minio.PutObjectOptions{ContentType: "application/yaml"})
	return err
}

// Remove deletes an object.
func (m *MinIO) Remove(ctx context.Context, bucket, key string) error {
	return m.Client.RemoveObject(ctx, bucket, key, minio.RemoveObjectOptions{})
}

// Close stops the front and MinIO and removes its data.
func (m *MinIO) Close() {
	if m.Front != nil {
		m.Front.Close()
	}
	if m.cmd != nil && m.cmd.Process != nil {
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-m.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.done
		}
	}
	os.RemoveAll(m.dir)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
