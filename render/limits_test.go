// Rendering runs in one goroutine (a chart in a child process), and the
// race detector made these tests ten times slower: make test runs them
// without it (make test-norace), the store's and the rest with it.

//go:build !race

package render

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// nestedArrays is a JSON value n arrays deep.
func nestedArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// laughs is a YAML file of docs documents, each a billion laughs of
// levels levels of ten aliases: small, and 10^levels values per document
// once aliases are expanded.
func laughs(docs, levels int) string {
	var b strings.Builder
	for d := 0; d < docs; d++ {
		if d > 0 {
			b.WriteString("---\n")
		}
		b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol" + fmt.Sprint(d) + "\n")
		b.WriteString("l0: &l0 [lol]\n")
		for l := 1; l <= levels; l++ {
			fmt.Fprintf(&b, "l%d: &l%d [", l, l)
			for i := 0; i < 10; i++ {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "*l%d", l-1)
			}
			b.WriteString("]\n")
		}
	}
	return b.String()
}

const cmHead = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"

// TestRenderLimits renders files beyond each limit: the render fails with
// a *LimitError naming the file (and line) and the flag, instead of
// exhausting the guard's stack or memory.
func TestRenderLimits(t *testing.T) {
	small := Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 3 << 20}
	big := strings.Repeat("x", 700<<10)
	tests := []struct {
		name     string
		repo     map[string]string
		dir      string
		opts     RenderOptions
		wantPath string
		wantLine int
		wantFlag string
	}{
		{"JSON nested 100,000 deep", map[string]string{"a.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},` + "\n" + `"data": ` + nestedArrays(100_000) + "}"}, ".", RenderOptions{}, "a.json", 2, flagMaxDepth},
		{"JSON nested 1,000,000 deep, substituted", map[string]string{"a.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": ` + nestedArrays(1_000_000) + "}"}, ".", RenderOptions{Vars: map[string]string{}}, "a.json", 1, flagMaxDepth},
		{"JSON nested one level too deep", map[string]string{"a.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": ` + nestedArrays(100) + "}"}, ".", RenderOptions{}, "a.json", 1, flagMaxDepth},
		{"YAML nested 5,000 deep", map[string]string{"a.yaml": cmHead + "data: " + nestedArrays(5000) + "\n"}, ".", RenderOptions{}, "a.yaml", 5, flagMaxDepth},
		{"YAML nested in block style", map[string]string{"a.yaml": cmHead + "data:" + func() string {
			var b strings.Builder
			for i := 0; i < 120; i++ {
				b.WriteString("\n" + strings.Repeat(" ", i+1) + "k:")
			}
			return b.String() + " 1\n"
		}()}, ".", RenderOptions{}, "a.yaml", 105, flagMaxDepth},
		{"billion laughs in one document", map[string]string{"a.yaml": laughs(1, 9)}, ".", RenderOptions{}, "a.yaml", 0, flagMaxAliases},
		// Two bytes of the file a node: at the default bound, 2 MB.
		{"a flow list of tiny values", map[string]string{"a.yaml": cmHead + "data:\n  x: [" + strings.Repeat("0,", 20_000) + "0]\n"}, ".", RenderOptions{Limits: Limits{MaxYAMLNodes: 10_000}}, "a.yaml", 6, flagMaxYAMLNodes},
		{"tiny values across documents", map[string]string{"a.yaml": strings.Repeat(cmHead+"data: {a: [0,0,0,0,0,0,0,0,0,0]}\n---\n", 2_000)}, ".", RenderOptions{Limits: Limits{MaxYAMLNodes: 10_000}}, "a.yaml", 0, flagMaxYAMLNodes},
		{"Kustomize: a resource of too many nodes", map[string]string{"k/kustomization.yaml": "resources: [a.yaml]\n", "k/a.yaml": cmHead + "data: {x: [" + strings.Repeat("0,", 20_000) + "0]}\n"}, "k", RenderOptions{Limits: Limits{MaxYAMLNodes: 10_000}}, "k/a.yaml", 0, flagMaxYAMLNodes},
		{"billion laughs across documents: 1.4 KB", map[string]string{"a.yaml": laughs(8, 5)}, ".", RenderOptions{}, "a.yaml", 0, flagMaxAliases},
		{"a long string aliased many times", map[string]string{"a.yaml": cmHead + "big: &big " + strings.Repeat("x", 1<<20) + "\nl1: &l1 [*big, *big, *big, *big, *big, *big, *big, *big]\nl2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\nl3: [*l2, *l2]\n"}, ".", RenderOptions{Limits: Limits{MaxFileBytes: 2 << 20}}, "a.yaml", 0, flagMaxDecodedSize},
		{"a file too large", map[string]string{"a.yaml": cmHead + "data: {x: " + strings.Repeat("y", 2<<20) + "}\n"}, ".", RenderOptions{Limits: small}, "a.yaml", 0, flagMaxFileSize},
		{"files too large together", map[string]string{"a.yaml": cmHead + "# " + big, "b.yaml": cmHead + "# " + big, "c.yaml": cmHead + "# " + big, "d.yaml": cmHead + "# " + big, "e.yaml": cmHead + "# " + big}, ".", RenderOptions{Limits: small}, "e.yaml", 0, flagMaxTotalSize},
		{"a variable written too many times", map[string]string{"a.yaml": cmHead + "data:\n" + strings.Repeat("  ${V}: ${V}${V}${V}\n", 1)}, ".", RenderOptions{Vars: map[string]string{"V": strings.Repeat("v", 1<<20)}, Limits: Limits{MaxDecodedBytes: 2 << 20}}, "a.yaml", 1, flagMaxDecodedSize},
		// ${V//${V:0:0}/R} puts R around every character of V: nested,
		// the text multiplies by V's length at every level.
		{"global replacements nested", map[string]string{"a.yaml": cmHead + "data:\n  k: " + func() string {
			e := "x"
			for range 12 {
				e = "${V//${V:0:0}/" + e + "}"
			}
			return e
		}() + "\n"}, ".", RenderOptions{Vars: map[string]string{"V": "abcdefgh"}}, "a.yaml", 1, flagMaxDecodedSize},
		{"a folder of too many files", func() map[string]string {
			m := map[string]string{}
			for i := range 30 {
				m[fmt.Sprintf("d/cm%d.yaml", i)] = cmHead
			}
			return m
		}(), ".", RenderOptions{Limits: Limits{MaxFiles: 20}}, ".", 0, flagMaxFiles},
		{"Kustomize: a repository of too many files", func() map[string]string {
			m := map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\n", "k/cm.yaml": cmHead}
			for i := range 30 {
				m[fmt.Sprintf("elsewhere/f%d.txt", i)] = "x"
			}
			return m
		}(), "k", RenderOptions{Limits: Limits{MaxFiles: 20}}, ".", 0, flagMaxFiles},
		{"Kustomize: a resource nested too deep", map[string]string{"k/kustomization.yaml": "resources: [a.json]\n", "k/a.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": ` + nestedArrays(5000) + "}"}, "k", RenderOptions{}, "k/a.json", 1, flagMaxDepth},
		{"Kustomize: billion laughs in a resource", map[string]string{"k/kustomization.yaml": "resources: [a.yaml]\n", "k/a.yaml": laughs(1, 7)}, "k", RenderOptions{}, "k/a.yaml", 0, flagMaxAliases},
		{"Kustomize: billion laughs in a patch", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\npatches: [{path: p.yaml}]\n", "k/cm.yaml": cmHead, "k/p.yaml": strings.Replace(laughs(1, 7), "lol0", "x", 1)}, "k", RenderOptions{}, "k/p.yaml", 0, flagMaxAliases},
		{"Kustomize: billion laughs in the kustomization", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\ncommonAnnotations:\n  a: &a [x,x,x,x,x,x,x,x,x,x]\n  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n  f: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n", "k/cm.yaml": cmHead}, "k", RenderOptions{}, "k/kustomization.yaml", 0, flagMaxAliases},
		{"Kustomize: a base read by many overlays", func() map[string]string {
			m := map[string]string{"base/kustomization.yaml": "resources: [cm.yaml]\n", "base/cm.yaml": cmHead + "# " + big + "\n", "k/kustomization.yaml": "resources:\n"}
			for i := 0; i < 8; i++ {
				m["k/kustomization.yaml"] += fmt.Sprintf("- o%d\n", i)
				m[fmt.Sprintf("k/o%d/kustomization.yaml", i)] = fmt.Sprintf("namePrefix: o%d-\nresources: [../../base]\n", i)
			}
			return m
		}(), "k", RenderOptions{Limits: small}, "base/cm.yaml", 0, flagMaxTotalSize},
		{"Helm: values nested too deep", map[string]string{"c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n", "c/values.yaml": "x: " + nestedArrays(5000) + "\n"}, "c", RenderOptions{}, "c/values.yaml", 1, flagMaxDepth},
		{"Helm: billion laughs in a values file", map[string]string{"c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n", "c/v.yaml": laughs(1, 7)}, "c", RenderOptions{Helm: HelmOptions{ValuesFiles: []string{"v.yaml"}}}, "c/v.yaml", 0, flagMaxAliases},
		{"Helm: billion laughs in a subchart's values", map[string]string{"c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n", "c/charts/s/Chart.yaml": "apiVersion: v2\nname: s\nversion: 1.0.0\n", "c/charts/s/values.yaml": laughs(1, 7)}, "c", RenderOptions{}, "c/charts/s/values.yaml", 0, flagMaxAliases},
		{"Helm: a template that renders too deep", map[string]string{"c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n", "c/templates/cm.yaml": cmHead + "data: {{ repeat 500 \"[\" }}{{ repeat 500 \"]\" }}\n"}, "c", RenderOptions{}, "c/templates/cm.yaml", 0, flagMaxDepth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range tt.repo {
				fsys[p] = files(p, c)[p]
			}
			start := time.Now()
			_, err := RenderWith(fsys, tt.dir, Source{}, tt.opts)
			t.Logf("%.300v (%s)", err, time.Since(start).Round(time.Millisecond))
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v (%T), want a RenderError", err, err)
			}
			var le *LimitError
			if !errors.As(err, &le) || le.Flag != tt.wantFlag {
				t.Fatalf("err = %v, want a LimitError of --%s", err, tt.wantFlag)
			}
			if re.Path != tt.wantPath || tt.wantLine != 0 && re.Line != tt.wantLine {
				t.Errorf("error at %s:%d, want %s:%d", re.Path, re.Line, tt.wantPath, tt.wantLine)
			}
			if !strings.Contains(err.Error(), "--"+tt.wantFlag+"=") {
				t.Errorf("err = %q, want it to name --%s and its value", err, tt.wantFlag)
			}
		})
	}
}

// TestRenderWithinLimits renders what real repositories hold near the
// limits: nesting a level short of the limit, aliases used as people use
// them, a Kustomize build in a repository with a file beyond the limits
// that the build does not use.
func TestRenderWithinLimits(t *testing.T) {
	tests := []struct {
		name string
		repo map[string]string
		dir  string
		opts RenderOptions
		want int
	}{
		{"JSON nested to the limit", map[string]string{"a.json": `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"x": ` + nestedArrays(98) + "}}"}, ".", RenderOptions{}, 1},
		{"YAML nested to the limit", map[string]string{"a.yaml": cmHead + "data: {x: " + nestedArrays(98) + "}\n"}, ".", RenderOptions{}, 1},
		{"anchors and merge keys in many documents", map[string]string{"a.yaml": strings.Repeat(cmHead+"labels: &l {app: web, team: a}\nmore:\n  <<: *l\n  x: [*l, *l]\n---\n", 500)}, ".", RenderOptions{}, 500},
		{"Kustomize reads only what it uses", map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\n", "k/cm.yaml": cmHead, "other/huge.yaml": strings.Repeat("#", 2<<20), "other/deep.json": nestedArrays(100_000)}, "k", RenderOptions{Limits: Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 1 << 20}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range tt.repo {
				fsys[p] = files(p, c)[p]
			}
			objs, err := RenderWith(fsys, tt.dir, Source{}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != tt.want {
				t.Errorf("%d objects, want %d", len(objs), tt.want)
			}
		})
	}
}

// TestHelmLimits renders charts whose templates never end, allocate
// without end or render too much: each fails the render, naming
// Chart.yaml and the flag, within the time limit, and the guard's process
// goes on (the chart renders in a process of its own).
func TestHelmLimits(t *testing.T) {
	chart := func(template string) map[string]string {
		return map[string]string{
			"c/Chart.yaml":        "apiVersion: v2\nname: c\nversion: 1.0.0\n",
			"c/templates/cm.yaml": cmHead + "data:\n  x: {{ " + template + " | quote }}\n",
		}
	}
	tests := []struct {
		name     string
		template string
		limits   Limits
		wantFlag string // "" for a crash
		wantMsg  string
	}{
		{"loops that never end", `include "loop" .`, Limits{HelmTimeout: 2 * time.Second}, flagHelmTimeout, "took longer than 2s"},
		{"a string that doubles 40 times", `include "double" .`, Limits{HelmMaxMemoryBytes: 64 << 20}, flagHelmMaxMemory, "more than 64Mi of memory"},
		{"a list of a billion numbers", `len (until 1000000000)`, Limits{HelmMaxMemoryBytes: 64 << 20}, flagHelmMaxMemory, "more than 64Mi of memory"},
		{"too much output", `repeat 3000000 "a"`, Limits{HelmMaxOutputBytes: 1 << 20}, flagHelmMaxOutput, "more than 1Mi of manifests"},
		{"a value nested 200,000 deep, written as JSON", `include "deep" .`, Limits{}, "", "fatal error: stack overflow"},
	}
	const helpers = `{{- define "loop" }}{{ range $i := until 100000 }}{{ range $j := until 100000 }}{{ end }}{{ end }}{{ end }}
{{- define "double" }}{{ $x := "0123456789abcdef" }}{{ range until 40 }}{{ $x = print $x $x }}{{ end }}{{ len $x }}{{ end }}
{{- define "deep" }}{{ $d := dict }}{{ range until 200000 }}{{ $d = dict "a" $d }}{{ end }}{{ toJson $d | len }}{{ end }}
`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := files()
			for p, c := range chart(tt.template) {
				fsys[p] = files(p, c)[p]
			}
			fsys["c/templates/_helpers.tpl"] = files("x", helpers)["x"]
			start := time.Now()
			_, err := RenderWith(fsys, "c", Source{}, RenderOptions{Limits: tt.limits})
			took := time.Since(start)
			t.Logf("%.300v (%s)", err, took.Round(time.Millisecond))
			var re *RenderError
			if !errors.As(err, &re) || re.Path != "c/Chart.yaml" {
				t.Fatalf("err = %v, want a RenderError naming c/Chart.yaml", err)
			}
			var le *LimitError
			if tt.wantFlag != "" && (!errors.As(err, &le) || le.Flag != tt.wantFlag) {
				t.Errorf("err = %v, want a LimitError of --%s", err, tt.wantFlag)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to say %q", err, tt.wantMsg)
			}
		})
	}
}

func TestLimitFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    Limits
		wantErr string
	}{
		{nil, DefaultLimits(), ""},
		{[]string{"--render-max-file-size=1Mi", "--render-max-total-size=1G", "--render-max-depth=50", "--render-max-yaml-aliases=10", "--render-max-decoded-size=500000", "--render-max-yaml-nodes=1000",
			"--render-max-files=500", "--render-helm-timeout=5s", "--render-helm-max-output=2Mi", "--render-helm-max-memory=1Gi"},
			Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 1e9, MaxDepth: 50, MaxAliasValues: 10, MaxDecodedBytes: 500000, MaxYAMLNodes: 1000, MaxFiles: 500, HelmTimeout: 5 * time.Second, HelmMaxOutputBytes: 2 << 20, HelmMaxMemoryBytes: 1 << 30}, ""},
		{[]string{"--render-max-file-size=0"}, Limits{}, "not a positive number of bytes"},
		{[]string{"--render-max-file-size=lots"}, Limits{}, "render-max-file-size"},
		{[]string{"--render-max-depth=0"}, Limits{}, "--render-max-depth: must be above 0"},
		{[]string{"--render-max-file-size=1Gi"}, Limits{}, "--render-max-file-size (1Gi) is above --render-max-total-size (256Mi)"},
	}
	for _, tt := range tests {
		l := DefaultLimits()
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		l.BindFlags(fs)
		err := fs.Parse(tt.args)
		if err == nil {
			err = l.Validate()
		}
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err = %v, want %q", tt.args, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case l != tt.want:
			t.Errorf("%v: %+v, want %+v", tt.args, l, tt.want)
		}
	}
	if f := pflag.NewFlagSet("x", pflag.ContinueOnError); true {
		l := DefaultLimits()
		l.BindFlags(f)
		if got := f.Lookup("render-max-file-size").DefValue; got != "16Mi" {
			t.Errorf("default shown as %q, want 16Mi", got)
		}
	}
}

// TestHelmProcessThatCannotStart: when the process that renders a chart
// cannot start, the render fails with an error that is not a RenderError,
// so that the fetcher tries the revision again instead of failing it.
func TestHelmProcessThatCannotStart(t *testing.T) {
	saved := helmExecutable
	t.Cleanup(func() { helmExecutable = saved })
	helmExecutable = func() (string, error) { return "/nonexistent/driftguard", nil }
	fsys := files("c/Chart.yaml", "apiVersion: v2\nname: c\nversion: 1.0.0\n", "c/templates/cm.yaml", cmHead)
	_, err := Render(fsys, "c", Source{})
	var re *RenderError
	if err == nil || errors.As(err, &re) || !strings.Contains(err.Error(), "start the process that renders the chart") {
		t.Fatalf("err = %v (%T), want a failure to start that is not a RenderError", err, err)
	}
}

// TestKustomizeReplacementsBound: replacements that copy an object's spec
// into two fields of itself double it at every entry; the render fails
// naming the kustomization once a resource passes a million nodes (or 64
// MiB of values), instead of filling the guard's memory.
func TestKustomizeReplacementsBound(t *testing.T) {
	var k strings.Builder
	k.WriteString("resources: [bomb.yaml]\nreplacements:\n")
	for range 40 {
		k.WriteString("- source: {kind: Bomb, name: b, fieldPath: spec}\n  targets:\n  - select: {kind: Bomb, name: b}\n    fieldPaths: [spec.l, spec.r]\n    options: {create: true}\n")
	}
	// And one that writes a string into itself with a delimiter doubles
	// the string, adding bytes, not nodes.
	var d strings.Builder
	d.WriteString("resources: [bomb.yaml]\nreplacements:\n")
	for range 40 {
		d.WriteString("- source: {kind: Bomb, name: b, fieldPath: spec.k}\n  targets:\n  - select: {kind: Bomb, name: b}\n    fieldPaths: [spec.k]\n    options: {delimiter: x, index: -1}\n")
	}
	for _, kustomization := range []string{k.String(), d.String()} {
		fsys := files("k/kustomization.yaml", kustomization, "k/bomb.yaml", "apiVersion: example.com/v1\nkind: Bomb\nmetadata:\n  name: b\nspec:\n  k: v\n")
		start := time.Now()
		_, err := RenderWith(fsys, "k", Source{}, RenderOptions{})
		t.Logf("%.300v (%s)", err, time.Since(start).Round(time.Millisecond))
		var re *RenderError
		if !errors.As(err, &re) || re.Path != "k/kustomization.yaml" || !strings.Contains(err.Error(), "grow beyond 1000000 YAML nodes or 67108864 bytes") {
			t.Fatalf("err = %v, want the kustomization refused beyond a million nodes or 64 MiB", err)
		}
	}
}
