package devenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FailPodAnnotation on a pod (in a Job's pod template, say) makes the
// simulated cluster fail it: once KWOK has it Running, the stage in
// extraKWOKStages moves it to phase Failed, its containers terminated with
// exit code 1 (reason Error), instead of letting it run or complete. Tests
// use it for a failing Job, which KWOK's stock fast stages cannot produce.
const FailPodAnnotation = "driftguard.io/test-fail"

// CrashLoopPodAnnotation on a pod makes the simulated cluster crash-loop
// its first container as a kubelet shows it: running for a moment (Ready),
// terminated with exit code 1 (reason Error), waiting in CrashLoopBackOff
// with the termination as lastState, then running again with restartCount
// one higher; round and round every few seconds (stages crash, back-off and
// restart in extraKWOKStages). The pod stays in phase Running. Use it on
// pods with restartPolicy Always or OnFailure, one container.
const CrashLoopPodAnnotation = "driftguard.io/test-crashloop"

// extraStagesFile is where startSimulation writes extraKWOKStages (in the
// cluster's folder); KWOK reads it after the stock stages.
const extraStagesFile = "kwok-driftguard-stages.yaml"

// extraKWOKStages are our own KWOK stages, added to the stock fast ones:
// pod-fail (FailPodAnnotation) and pod-crash, pod-back-off and pod-restart
// (CrashLoopPodAnnotation). pod-fail matches the same pods as the stock pod-complete (and more: any
// Running pod with the annotation); its weight of 1 against the stock
// stages' 0 makes KWOK always pick it for those pods.
var extraKWOKStages = strings.Join([]string{
	podStage("driftguard-pod-fail", FailPodAnnotation, "", 0, `{{ $now := Now }}
conditions:
`+podCondition("Ready", "False", "reason: PodFailed")+
		podCondition("ContainersReady", "False", "reason: PodFailed")+
		`containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 1
      finishedAt: {{ $now | Quote }}
      reason: Error
      message: failed on purpose (annotation `+FailPodAnnotation+`)
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Failed
reason: Error
message: failed on purpose (annotation `+FailPodAnnotation+`)
`),
	podStage("driftguard-pod-crash", CrashLoopPodAnnotation, `- key: .status.containerStatuses.[0].state.running.startedAt
  operator: Exists
`, 1500, `{{ $now := Now }}
{{ $cs := index .status.containerStatuses 0 }}
`+runningConditions("False", `reason: ContainersNotReady
message: "containers with unready status: [{{ $cs.name }}]"`)+
		firstContainer(false, "{{ $cs.restartCount }}")+`  {{ with $cs.lastState }}
  lastState:
    {{ YAML . 2 }}
  {{ end }}
  state:
    terminated:
      exitCode: 1
      reason: Error
      message: crashed on purpose (annotation `+CrashLoopPodAnnotation+`)
      startedAt: {{ $cs.state.running.startedAt | Quote }}
      finishedAt: {{ $now | Quote }}
`),
	podStage("driftguard-pod-back-off", CrashLoopPodAnnotation, `- key: .status.containerStatuses.[0].state.terminated.exitCode
  operator: Exists
`, 1000, `{{ $cs := index .status.containerStatuses 0 }}
`+firstContainer(false, "{{ $cs.restartCount }}")+`  lastState:
    terminated:
      {{ YAML $cs.state.terminated 3 }}
  state:
    waiting:
      reason: CrashLoopBackOff
      message: back-off 10s restarting failed container={{ $cs.name }} pod={{ .metadata.name }}_{{ .metadata.namespace }}({{ .metadata.uid }})
`),
	podStage("driftguard-pod-restart", CrashLoopPodAnnotation, `- key: .status.containerStatuses.[0].state.waiting.reason
  operator: In
  values:
  - CrashLoopBackOff
`, 3000, `{{ $now := Now }}
{{ $cs := index .status.containerStatuses 0 }}
`+runningConditions("True", `reason: ""
message: ""`)+
		firstContainer(true, "{{ add $cs.restartCount 1 }}")+`  lastState:
    {{ YAML $cs.lastState 2 }}
  state:
    running:
      startedAt: {{ $now | Quote }}
`),
}, "---\n")

// podStage is a KWOK Stage of weight 1 for the Running pods, not being
// deleted, whose annotation is "true" and that match the selector
// expressions in match (YAML list items, "" for none): delayMs milliseconds
// after they match (at once for 0), KWOK writes status, a template, into the
// pod's status.
func podStage(name, annotation, match string, delayMs int, status string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: %s
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values:
      - Running
    - key: '.metadata.annotations["%s"]'
      operator: In
      values:
      - "true"
`, name, annotation)
	b.WriteString(indent(match, "    "))
	b.WriteString("  weight: 1\n")
	if delayMs > 0 {
		fmt.Fprintf(&b, "  delay:\n    durationMilliseconds: %d\n", delayMs)
	}
	b.WriteString("  next:\n    statusTemplate: |\n")
	b.WriteString(indent(status, "      "))
	return b.String()
}

// podCondition is one entry of a pod's status.conditions, set now, with
// the lines of more (reason, message) after its type.
func podCondition(typ, status, more string) string {
	s := "- lastTransitionTime: {{ $now | Quote }}\n  status: \"" + status + "\"\n  type: " + typ + "\n"
	if more != "" {
		s += indent(more+"\n", "  ")
	}
	return s
}

// runningConditions are the conditions of a scheduled, initialized pod
// whose containers are ready or not (ready "True" or "False", with the lines
// of more).
func runningConditions(ready, more string) string {
	return "conditions:\n" + podCondition("Initialized", "True", "") +
		podCondition("Ready", ready, more) + podCondition("ContainersReady", ready, more) +
		podCondition("PodScheduled", "True", "")
}

// firstContainer starts status.containerStatuses with the pod's first
// container ($cs), ready and started or not, with restartCount.
func firstContainer(ready bool, restartCount string) string {
	return fmt.Sprintf(`containerStatuses:
- image: {{ $cs.image | Quote }}
  name: {{ $cs.name | Quote }}
  ready: %[1]t
  started: %[1]t
  restartCount: %[2]s
`, ready, restartCount)
}

// indent puts prefix before every line of s that is not empty.
func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "")
}

// writeExtraStages writes extraKWOKStages into the cluster's folder and
// returns the file's path.
func (c *Cluster) writeExtraStages() (string, error) {
	path := filepath.Join(c.Dir, extraStagesFile)
	if err := os.WriteFile(path, []byte(extraKWOKStages), 0o644); err != nil {
		return "", fmt.Errorf("devenv: writing KWOK stages %s: %w", path, err)
	}
	return path, nil
}
