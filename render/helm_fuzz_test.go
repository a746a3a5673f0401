package render

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// helmTar writes a tar of the entries (name, then content), for seeds.
func helmTar(entries ...string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for i := 0; i+1 < len(entries); i += 2 {
		_ = tw.WriteHeader(&tar.Header{Name: entries[i], Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(entries[i+1]))})
		_, _ = tw.Write([]byte(entries[i+1]))
	}
	_ = tw.Close()
	return buf.Bytes()
}

func gzipped(data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return buf.Bytes()
}

// FuzzHelmSubchart loads a chart committed to Git with a subchart archive
// charts/sub.tgz written by the fuzzer (its tar gzipped, or its bytes as
// they are with raw), as the guard reads the chart's files and Helm's
// loader, in the render process, unpacks the archive. It must not panic,
// and a chart that loads is a tree of valid charts whose files are all
// inside their chart.
func FuzzHelmSubchart(f *testing.F) {
	sub := "apiVersion: v2\nname: sub\nversion: 0.1.0\n"
	f.Add(helmTar("sub/Chart.yaml", sub, "sub/values.yaml", "port: 80\n", "sub/templates/svc.yaml", "kind: Service\nmetadata: {name: {{ .Release.Name }}}\n"), false)
	f.Add(helmTar("sub/Chart.yaml", sub, "sub/charts/deeper.tgz", string(gzipped(helmTar("deeper/Chart.yaml", "apiVersion: v2\nname: deeper\nversion: 1.0.0\n")))), false)
	f.Add(helmTar("sub/Chart.yaml", sub, "sub/../../../etc/passwd", "root:x:0:0\n"), false)
	f.Add(helmTar("sub/Chart.yaml", sub, "/abs/Chart.yaml", sub, "sub/templates/../../x.yaml", "x"), false)
	f.Add(helmTar("sub/Chart.yaml", sub, "sub/values.yaml", "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]\n"), false)
	f.Add(helmTar("sub/Chart.yaml", "apiVersion: v2\nname: ../../x\nversion: not-a-version\ndependencies: [{name: y, repository: 'http://127.0.0.1:1'}]\n"), false)
	f.Add(helmTar("Chart.yaml", sub, "values.schema.json", `{"$ref": "http://127.0.0.1:1/schema.json"}`), false)
	f.Add(helmTar("sub/Chart.yaml", sub, "sub/Chart.yaml", "apiVersion: v1\nname: sub\nversion: 0.2.0\n"), false)
	f.Add(gzipped(helmTar("sub/Chart.yaml", sub)), true)
	f.Add([]byte("not gzip"), true)
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		archive := data
		if !raw {
			archive = gzipped(data)
		}
		fsys := files(
			"c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\ndependencies: [{name: sub, version: 0.1.0}]\n",
			"c/values.yaml", "sub: {port: 8080}\n",
			"c/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
			"c/charts/sub.tgz", string(archive),
		)
		r, err := newRenderer(fsys, Source{}, RenderOptions{Limits: fuzzLimits})
		if err != nil {
			t.Fatal(err)
		}
		job, err := r.helmJob("c")
		if err != nil {
			return
		}
		chrt, err := loadChartFiles(job.Dir, job.Files)
		if err != nil {
			if _, ok := err.(*RenderError); !ok {
				t.Fatalf("error %v is not a RenderError", err)
			}
			return
		}
		checkChartTree(t, chrt, 0)
		t.Logf("loaded chart %s with %d subcharts", chrt.Name(), len(chrt.Dependencies()))
	})
}

// checkChartTree checks a loaded chart and its subcharts: valid
// metadata, files inside the chart.
func checkChartTree(t *testing.T, c *chart.Chart, depth int) {
	t.Helper()
	if depth > 100 {
		t.Fatalf("charts nested %d deep", depth)
	}
	if c.Metadata == nil {
		t.Fatalf("chart %q without metadata", c.Name())
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("chart %q loaded but is not valid: %v", c.Name(), err)
	}
	for _, group := range [][]*common.File{c.Files, c.Templates, c.Raw} {
		for _, f := range group {
			if f == nil || !filepath.IsLocal(f.Name) {
				t.Fatalf("chart %q has file %q outside it", c.Name(), f.Name)
			}
		}
	}
	for _, d := range c.Dependencies() {
		if d.Parent() != c {
			t.Fatalf("subchart %q of %q has another parent", d.Name(), c.Name())
		}
		checkChartTree(t, d, depth+1)
	}
}
