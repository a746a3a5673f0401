package devenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// FailPodAnnotation on a pod (in a Job's pod template, say) makes the
// simulated cluster fail it: once KWOK has it Running, the stage in
// extraKWOKStages moves it to phase Failed, its containers terminated with
// exit code 1 (reason Error), instead of letting it run or complete. Tests
// use it for a failing Job, which KWOK's stock fast stages cannot produce.
const FailPodAnnotation = "driftguard.io/test-fail"

// extraStagesFile is where startSimulation writes extraKWOKStages (in the
// cluster's folder); KWOK reads it after the stock stages.
const extraStagesFile = "kwok-driftguard-stages.yaml"

// extraKWOKStages are our own KWOK stages, added to the stock fast ones.
// pod-fail matches the same pods as the stock pod-complete (and more: any
// Running pod with the annotation); its weight of 1 against the stock
// stages' 0 makes KWOK always pick it for those pods.
var extraKWOKStages = fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: driftguard-pod-fail
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
  weight: 1
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
        reason: PodFailed
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
        reason: PodFailed
      containerStatuses:
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
            message: failed on purpose (annotation %s)
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
      reason: Error
      message: failed on purpose (annotation %s)
`, FailPodAnnotation, FailPodAnnotation, FailPodAnnotation)

// writeExtraStages writes extraKWOKStages into the cluster's folder and
// returns the file's path.
func (c *Cluster) writeExtraStages() (string, error) {
	path := filepath.Join(c.Dir, extraStagesFile)
	if err := os.WriteFile(path, []byte(extraKWOKStages), 0o644); err != nil {
		return "", fmt.Errorf("devenv: writing KWOK stages %s: %w", path, err)
	}
	return path, nil
}
