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
    - key: '.metadata.annotations["%[1]s"]'
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
            message: failed on purpose (annotation %[1]s)
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Failed
      reason: Error
      message: failed on purpose (annotation %[1]s)
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: driftguard-pod-crash
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
    - key: '.metadata.annotations["%[2]s"]'
      operator: In
      values:
      - "true"
    - key: .status.containerStatuses.[0].state.running.startedAt
      operator: Exists
  weight: 1
  delay:
    durationMilliseconds: 1500
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $cs := index .status.containerStatuses 0 }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
        reason: ContainersNotReady
        message: "containers with unready status: [{{ $cs.name }}]"
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
        reason: ContainersNotReady
        message: "containers with unready status: [{{ $cs.name }}]"
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      containerStatuses:
      - image: {{ $cs.image | Quote }}
        name: {{ $cs.name | Quote }}
        ready: false
        started: false
        restartCount: {{ $cs.restartCount }}
        {{ with $cs.lastState }}
        lastState:
          {{ YAML . 2 }}
        {{ end }}
        state:
          terminated:
            exitCode: 1
            reason: Error
            message: crashed on purpose (annotation %[2]s)
            startedAt: {{ $cs.state.running.startedAt | Quote }}
            finishedAt: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: driftguard-pod-back-off
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
    - key: '.metadata.annotations["%[2]s"]'
      operator: In
      values:
      - "true"
    - key: .status.containerStatuses.[0].state.terminated.exitCode
      operator: Exists
  weight: 1
  delay:
    durationMilliseconds: 1000
  next:
    statusTemplate: |
      {{ $cs := index .status.containerStatuses 0 }}
      containerStatuses:
      - image: {{ $cs.image | Quote }}
        name: {{ $cs.name | Quote }}
        ready: false
        started: false
        restartCount: {{ $cs.restartCount }}
        lastState:
          terminated:
            {{ YAML $cs.state.terminated 3 }}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: back-off 10s restarting failed container={{ $cs.name }} pod={{ .metadata.name }}_{{ .metadata.namespace }}({{ .metadata.uid }})
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: driftguard-pod-restart
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
    - key: '.metadata.annotations["%[2]s"]'
      operator: In
      values:
      - "true"
    - key: .status.containerStatuses.[0].state.waiting.reason
      operator: In
      values:
      - CrashLoopBackOff
  weight: 1
  delay:
    durationMilliseconds: 3000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $cs := index .status.containerStatuses 0 }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
        reason: ""
        message: ""
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
        reason: ""
        message: ""
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      containerStatuses:
      - image: {{ $cs.image | Quote }}
        name: {{ $cs.name | Quote }}
        ready: true
        started: true
        restartCount: {{ add $cs.restartCount 1 }}
        lastState:
          {{ YAML $cs.lastState 2 }}
        state:
          running:
            startedAt: {{ $now | Quote }}
`, FailPodAnnotation, CrashLoopPodAnnotation)

// writeExtraStages writes extraKWOKStages into the cluster's folder and
// returns the file's path.
func (c *Cluster) writeExtraStages() (string, error) {
	path := filepath.Join(c.Dir, extraStagesFile)
	if err := os.WriteFile(path, []byte(extraKWOKStages), 0o644); err != nil {
		return "", fmt.Errorf("devenv: writing KWOK stages %s: %w", path, err)
	}
	return path, nil
}
