package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestWriterSinkJSONLines(t *testing.T) {
	when := time.Date(2026, 3, 4, 5, 6, 7, 890123000, time.FixedZone("CET", 3600))
	tests := []struct {
		name   string
		rec    Record
		want   map[string]any // decoded JSON of the line
		absent []string       // keys that must not appear
	}{
		{
			name: "denied scale, every field",
			rec: Record{
				Time: when, Type: Decision, Guard: "shop", User: "alice", Groups: []string{"dev", "system:authenticated"},
				Manager: "kubectl", Operation: "UPDATE",
				Object: Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
				Fields: []Field{{Path: "/spec/replicas", Desired: 3, Live: 5}},
				Action: "deny", Reason: "managed by Git", Rule: "deny_unmanaged", PolicyRevision: "9f2c1e0",
				Source:     &Source{URL: "https://git.example/infra.git", Revision: "9f2c1e0", Path: "apps/web/deployment.yaml", Line: 1},
				RequestUID: "c0ffee", DryRun: true, Error: "x < y & z", DurationMS: 1.5,
			},
			want: map[string]any{
				"time": "2026-03-04T04:06:07.890123Z", "type": "decision", "guard": "shop", "user": "alice",
				"groups": []any{"dev", "system:authenticated"}, "manager": "kubectl", "operation": "UPDATE",
				"object": map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
				"fields": []any{map[string]any{"path": "/spec/replicas", "desired": 3.0, "live": 5.0}},
				"action": "deny", "reason": "managed by Git", "rule": "deny_unmanaged", "policyRevision": "9f2c1e0",
				"source":     map[string]any{"url": "https://git.example/infra.git", "revision": "9f2c1e0", "path": "apps/web/deployment.yaml", "line": 1.0},
				"requestUID": "c0ffee", "dryRun": true, "error": "x < y & z", "durationMs": 1.5,
			},
		},
		{
			name: "cluster-scoped core object, empty fields omitted",
			rec:  Record{Time: when, Type: Prune, Object: Object{Version: "v1", Kind: "Namespace", Name: "old"}, Action: "deleted"},
			want: map[string]any{
				"time": "2026-03-04T04:06:07.890123Z", "type": "prune", "action": "deleted",
				"object": map[string]any{"version": "v1", "kind": "Namespace", "name": "old"},
			},
			absent: []string{"guard", "user", "groups", "manager", "fields", "source", "dryRun", "error", "durationMs", "requestUID"},
		},
		{
			name: "field removed live keeps desired, zero desired kept",
			rec: Record{Time: when, Type: Drift, Object: Object{Version: "v1", Kind: "ConfigMap", Namespace: "a", Name: "b"},
				Fields: []Field{{Path: "/data/k", Desired: "v"}, {Path: "/spec/replicas", Desired: 0, Live: 2}}},
			want: map[string]any{
				"time": "2026-03-04T04:06:07.890123Z", "type": "drift",
				"object": map[string]any{"version": "v1", "kind": "ConfigMap", "namespace": "a", "name": "b"},
				"fields": []any{map[string]any{"path": "/data/k", "desired": "v"}, map[string]any{"path": "/spec/replicas", "desired": 0.0, "live": 2.0}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := NewWriterSink("stdout", &buf)
			if err := s.Write(context.Background(), []Record{tc.rec, tc.rec}); err != nil {
				t.Fatalf("Write: %v", err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(lines) != 2 {
				t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
			}
			if strings.Contains(lines[0], `\u003c`) {
				t.Errorf("HTML characters escaped: %s", lines[0])
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
				t.Fatalf("line is not JSON: %v\n%s", err, lines[0])
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("decoded line\n got %v\nwant %v", got, tc.want)
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("key %q present, want omitted", k)
				}
			}
			var back Record
			if err := json.Unmarshal([]byte(lines[1]), &back); err != nil {
				t.Fatalf("decode into Record: %v", err)
			}
			if !back.Time.Equal(tc.rec.Time) || back.Object != tc.rec.Object || back.Type != tc.rec.Type {
				t.Errorf("round trip: got %+v", back)
			}
		})
	}
}
