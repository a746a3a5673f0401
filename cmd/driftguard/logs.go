package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// partOfLabel marks every object of the chart (app.kubernetes.io/part-of:
// driftguard); logs finds the guard's Deployments by it.
const partOfLabel = "app.kubernetes.io/part-of"

// guardContainer is the container of the guard in its pods (the chart's).
const guardContainer = "driftguard"

type logsOptions struct {
	clusterOptions
	guard  string
	follow bool
	tail   int64
	since  time.Duration
}

func newLogsCommand() *cobra.Command {
	o := &logsOptions{}
	cmd := &cobra.Command{
		Use:   "logs [--guard NAME] [-f] [--tail N] [--since D]",
		Short: "Print the guard's logs, filtered by Guard",
		Long: `logs reads the logs of the guard's pods through the API server: the pods of
the Deployments labelled app.kubernetes.io/part-of=driftguard in the
guard's namespace (-n), container driftguard. Lines are printed as the
guard wrote them (JSON, one object a line).

--guard NAME keeps the lines about one Guard: the JSON lines whose key
"guard" is NAME (what the reconciler, the source follower and the audit
records write) or whose key "Guard" names it (controller-runtime's own
lines); lines that are not JSON are left out then.`,
		Example: `  driftguard logs --guard shop --since 1h
  driftguard logs --guard shop -f -n driftguard-system`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLogs(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	o.bind(cmd, true)
	cmd.Flags().StringVar(&o.guard, "guard", "", "only the lines about this Guard")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "keep printing new lines")
	cmd.Flags().Int64Var(&o.tail, "tail", -1, "only the last N lines of each pod (before filtering); -1: all")
	cmd.Flags().DurationVar(&o.since, "since", 0, "only lines newer than this (e.g. 1h)")
	_ = cmd.RegisterFlagCompletionFunc("guard", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return o.guardNames(prefix), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func runLogs(ctx context.Context, out io.Writer, o *logsOptions) error {
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pods, err := guardPods(ctx, cs, o.namespace)
	if err != nil {
		return err
	}
	opts := &corev1.PodLogOptions{Container: guardContainer, Follow: o.follow}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	if o.since > 0 {
		s := int64(o.since.Seconds())
		opts.SinceSeconds = &s
	}
	w := &lockedWriter{w: out}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := func() error {
				rc, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, opts).Stream(ctx)
				if err != nil {
					return fmt.Errorf("logs of pod %s/%s: %w", p.Namespace, p.Name, err)
				}
				defer rc.Close()
				if err := filterGuardLogs(rc, w, o.guard); err != nil {
					return fmt.Errorf("logs of pod %s/%s: %w", p.Namespace, p.Name, err)
				}
				return nil
			}()
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// guardPods returns the pods of the guard's Deployments in ns (labelled
// app.kubernetes.io/part-of=driftguard), by name.
func guardPods(ctx context.Context, cs kubernetes.Interface, ns string) ([]corev1.Pod, error) {
	deps, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: partOfLabel + "=driftguard"})
	if err != nil {
		return nil, fmt.Errorf("list the guard's Deployments in namespace %s: %w", ns, err)
	}
	if len(deps.Items) == 0 {
		return nil, fmt.Errorf("no Deployment labelled %s=driftguard in namespace %s: is the guard installed there (-n)?", partOfLabel, ns)
	}
	seen := map[string]bool{}
	var pods []corev1.Pod
	for _, d := range deps.Items {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || sel == labels.Nothing() {
			return nil, fmt.Errorf("deployment %s/%s: spec.selector: %v", ns, d.Name, err)
		}
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, fmt.Errorf("list pods of deployment %s/%s: %w", ns, d.Name, err)
		}
		for _, p := range list.Items {
			if !seen[p.Name] {
				seen[p.Name] = true
				pods = append(pods, p)
			}
		}
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("the guard's Deployments in namespace %s have no pods", ns)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

// maxLogLine bounds one line of the guard's log (a render error quoting a
// large file); longer lines end the stream with an error.
const maxLogLine = 1 << 20

// filterGuardLogs copies the lines of r to w; with guard set, only the
// JSON lines about that Guard (guardOfLine).
func filterGuardLogs(r io.Reader, w io.Writer, guard string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLogLine)
	for sc.Scan() {
		line := sc.Bytes()
		if guard != "" && guardOfLine(line) != guard {
			continue
		}
		out := make([]byte, 0, len(line)+1)
		if _, err := w.Write(append(append(out, line...), '\n')); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	return nil
}

// guardOfLine returns the Guard a JSON log line is about: its "guard"
// key (the guard's own loggers and audit records) or the name in its
// "Guard" key (controller-runtime's reconciler lines); "" for others.
func guardOfLine(line []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return ""
	}
	var s string
	if raw, ok := m["guard"]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
		return s
	}
	var cr struct {
		Name string `json:"name"`
	}
	if raw, ok := m["Guard"]; ok && json.Unmarshal(raw, &cr) == nil {
		return cr.Name
	}
	return ""
}

// lockedWriter serialises the writes of several pods' streams.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
