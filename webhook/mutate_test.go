package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

func TestStamper(t *testing.T) {
	var buf bytes.Buffer
	v := newValidator(t, &buf)
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	s := &Stamper{Store: v.Store, Now: func() time.Time { return now }}
	scaled := strings.Replace(desiredDeployment, `"replicas":3`, `"replicas":5`, 1)
	annotated := strings.Replace(scaled, `"labels"`, `"annotations":{"a":"b"},"labels"`, 1)
	tests := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		path string // of the patch; "" for no patch
	}{
		{"change to a Git field, no annotations yet", request(admissionv1.Update, "alice", "", scaled), "/metadata/annotations"},
		{"change to a Git field, annotations there", request(admissionv1.Update, "alice", "", annotated), "/metadata/annotations/driftguard.io~1changed-by"},
		{"no Git field changes", request(admissionv1.Update, "alice", "", desiredDeployment), ""},
		{"scale subresource", request(admissionv1.Update, "alice", "scale", `{"kind":"Scale","spec":{"replicas":5}}`), ""},
		{"delete", request(admissionv1.Delete, "alice", "", desiredDeployment), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := s.Review(context.Background(), tt.req)
			if !resp.Allowed {
				t.Fatal("the stamper must never deny")
			}
			if tt.path == "" {
				if resp.Patch != nil {
					t.Fatalf("unexpected patch %s", resp.Patch)
				}
				return
			}
			var ops []patchOp
			if err := json.Unmarshal(resp.Patch, &ops); err != nil || len(ops) != 1 || ops[0].Path != tt.path {
				t.Fatalf("patch %s: %v", resp.Patch, err)
			}
			raw, _ := json.Marshal(ops[0].Value)
			if !strings.Contains(string(raw), `alice`) {
				t.Fatalf("stamp does not name the user: %s", raw)
			}
			var value string
			if m, ok := ops[0].Value.(map[string]any); ok {
				value, _ = m[v1alpha1.ChangedByAnnotation].(string)
			} else {
				value, _ = ops[0].Value.(string)
			}
			stamp, ok := v1alpha1.ParseChangedBy(value)
			if !ok || stamp.User != "alice" || !stamp.Time.Equal(now) || stamp.RequestUID != "uid-1" {
				t.Fatalf("stamp = %+v (%q)", stamp, value)
			}
		})
	}
}
