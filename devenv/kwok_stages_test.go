package devenv

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Each stage of extraKWOKStages is a Stage of the name, annotation, extra
// selector and delay it is written with, and its status template is a block
// that still reads as YAML lines (every line indented under statusTemplate).
func TestExtraKWOKStages(t *testing.T) {
	type stage struct {
		Metadata struct{ Name string }
		Spec     struct {
			Selector struct {
				MatchExpressions []struct {
					Key      string
					Operator string
					Values   []string
				} `json:"matchExpressions"`
			}
			Weight int
			Delay  *struct {
				DurationMilliseconds int `json:"durationMilliseconds"`
			}
			Next struct {
				StatusTemplate string `json:"statusTemplate"`
			}
		}
	}
	tests := []struct {
		name, annotation, extraKey string
		delay                      int
		inTemplate                 []string
	}{
		{"driftguard-pod-fail", FailPodAnnotation, "", 0, []string{"phase: Failed", "type: ContainersReady\n  reason: PodFailed", "annotation " + FailPodAnnotation}},
		{"driftguard-pod-crash", CrashLoopPodAnnotation, ".status.containerStatuses.[0].state.running.startedAt", 1500, []string{"type: PodScheduled", "ready: false", "restartCount: {{ $cs.restartCount }}", "crashed on purpose"}},
		{"driftguard-pod-back-off", CrashLoopPodAnnotation, ".status.containerStatuses.[0].state.terminated.exitCode", 1000, []string{"reason: CrashLoopBackOff", "ready: false"}},
		{"driftguard-pod-restart", CrashLoopPodAnnotation, ".status.containerStatuses.[0].state.waiting.reason", 3000, []string{"ready: true", "started: true", "restartCount: {{ add $cs.restartCount 1 }}", "status: \"True\"\n  type: Ready\n  reason: \"\""}},
	}
	docs := strings.Split(extraKWOKStages, "---\n")
	if len(docs) != len(tests) {
		t.Fatalf("%d stages, want %d", len(docs), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s stage
			if err := yaml.Unmarshal([]byte(docs[i]), &s); err != nil {
				t.Fatal(err)
			}
			if s.Metadata.Name != tt.name || s.Spec.Weight != 1 {
				t.Fatalf("stage %d is %q of weight %d", i, s.Metadata.Name, s.Spec.Weight)
			}
			m := s.Spec.Selector.MatchExpressions
			if len(m) < 3 || m[2].Key != `.metadata.annotations["`+tt.annotation+`"]` {
				t.Fatalf("selector %+v does not ask for %s", m, tt.annotation)
			}
			if tt.extraKey != "" && (len(m) != 4 || m[3].Key != tt.extraKey) {
				t.Fatalf("selector %+v lacks %s", m, tt.extraKey)
			}
			switch {
			case tt.delay == 0 && s.Spec.Delay != nil:
				t.Fatalf("delay %+v, want none", s.Spec.Delay)
			case tt.delay > 0 && (s.Spec.Delay == nil || s.Spec.Delay.DurationMilliseconds != tt.delay):
				t.Fatalf("delay %+v, want %d ms", s.Spec.Delay, tt.delay)
			}
			for _, want := range tt.inTemplate {
				if !strings.Contains(s.Spec.Next.StatusTemplate, want) {
					t.Errorf("status template lacks %q:\n%s", want, s.Spec.Next.StatusTemplate)
				}
			}
		})
	}
}
