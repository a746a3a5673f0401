package sourceserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ChartRepo is a Helm chart repository served over HTTP from a folder that
// the real helm binary fills: helm package, then helm repo index. Like a
// static web server or S3 it sends Last-Modified and an ETag, and answers
// If-None-Match and If-Modified-Since with 304.
type ChartRepo struct {
	*Front
	Dir  string
	helm string
	home string // HELM_*_HOME

	// mu is held for reading while a request is served and for writing
	// by Atomically, so a client sees the folder before or after a change.
	mu sync.RWMutex
}

// StartChartRepo serves an empty repository; helmBin is the helm binary.
func StartChartRepo(helmBin string) (*ChartRepo, error) {
	dir, err := os.MkdirTemp("", "sourceserver-charts-")
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "sourceserver-helm-")
	if err != nil {
		return nil, err
	}
	c := &ChartRepo{Dir: dir, helm: helmBin, home: home}
	c.Front, err = NewFront(http.HandlerFunc(c.serve))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// URL is the repository's URL.
func (c *ChartRepo) URL() string { return "http://" + c.Addr() }

func (c *ChartRepo) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	name := filepath.Base(r.URL.Path)
	data, err := os.ReadFile(filepath.Join(c.Dir, name))
	if err != nil || strings.HasPrefix(name, ".") {
		http.NotFound(w, r)
		return
	}
	info, err := os.Stat(filepath.Join(c.Dir, name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", fmt.Sprintf(`"%x"`, sha256.Sum256(data)))
	http.ServeContent(w, r, name, info.ModTime(), bytes.NewReader(data))
}

// Close stops the server and removes its folders.
func (c *ChartRepo) Close() {
	c.Front.Close()
	os.RemoveAll(c.Dir)
	os.RemoveAll(c.home)
}

// AddChart writes a chart with a Chart.yaml of name and version and files
// (paths below the chart folder, templates/cm.yaml say), packages it into
// the repository and indexes the repository again.
func (c *ChartRepo) AddChart(ctx context.Context, name, version string, files map[string]string) error {
	src, err := os.MkdirTemp("", "sourceserver-chart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	chart := filepath.Join(src, name)
	all := map[string]string{"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ntype: application\n", name, version)}
	for p, v := range files {
		all[p] = v
	}
	for p, v := range all {
		full := filepath.Join(chart, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(v), 0o644); err != nil {
			return err
		}
	}
	if _, err := c.run(ctx, "package", chart, "--destination", c.Dir); err != nil {
		return err
	}
	return c.Index(ctx)
}

// Atomically runs change while no request is served: a client sees the
// repository before it or after it, never in between (a chart added, then
// its archive replaced, say).
func (c *ChartRepo) Atomically(change func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return change()
}

// Index runs helm repo index on the repository.
func (c *ChartRepo) Index(ctx context.Context) error {
	_, err := c.run(ctx, "repo", "index", c.Dir)
	return err
}

// Archive is the path of a packaged chart.
func (c *ChartRepo) Archive(name, version string) string {
	return filepath.Join(c.Dir, name+"-"+version+".tgz")
}

// PushOCI pushes a packaged chart of the repository to an OCI registry
// (oci://REGISTRY/PATH) with helm push over plain HTTP.
func (c *ChartRepo) PushOCI(ctx context.Context, name, version, ociURL string) (string, error) {
	return c.run(ctx, "push", c.Archive(name, version), ociURL, "--plain-http")
}

func (c *ChartRepo) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.helm, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+c.home, "HELM_CONFIG_HOME="+c.home, "HELM_DATA_HOME="+c.home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
