package jsonpack

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestPackRoundTrip(t *testing.T) {
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"creationTimestamp":"2026-12-04T23:26:01Z","generation":1,"labels":{"driftguard.io/guard":"shop"},"managedFields":[{"apiVersion":"apps/v1","fieldsType":"FieldsV1","manager":"driftguard","operation":"Apply","time":"2026-12-04T23:26:01Z"}],"name":"app-0042","namespace":"shop","resourceVersion":"123456","uid":"4f1c2b7e-9a6d-4e3b-8c2a-1d5f6e7a8b9c"},"spec":{"progressDeadlineSeconds":600,"replicas":0,"revisionHistoryLimit":10,"selector":{"matchLabels":{"app":"app-0042"}},"strategy":{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"},"template":{"metadata":{"labels":{"app":"app-0042"}},"spec":{"containers":[{"image":"registry.example/app:1.0","imagePullPolicy":"IfNotPresent","name":"app","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}`
	big, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]string{"blob": strings.Repeat("0123456789abcdef", 1<<14)}})
	tests := []struct {
		name   string
		raw    []byte
		atMost float64 // packed size / raw size
	}{
		{"empty", nil, 100},
		{"a Deployment as the API server answers it", []byte(deployment), 0.3},
		{"a ConfigMap", []byte(`{"apiVersion":"v1","data":{"greeting":"hello from Git","index":"42","value":"git"},"kind":"ConfigMap","metadata":{"labels":{"driftguard.io/guard":"shop"},"name":"cm-0042","namespace":"shop"}}`), 0.6},
		{"256 KiB of data", big, 0.05},
		{"not JSON at all", []byte{0, 1, 2, 255, 254, '"', '{'}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			packed := Pack(tt.raw)
			if again := Pack(tt.raw); !bytes.Equal(packed, again) {
				t.Fatal("the same JSON packed to different bytes")
			}
			got, err := Unpack(packed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.raw) {
				t.Fatalf("round trip changed the bytes: %q", got)
			}
			if ratio := float64(len(packed)) / float64(max(len(tt.raw), 1)); ratio > tt.atMost {
				t.Fatalf("packed %d of %d bytes (%.2f), want at most %.2f", len(packed), len(tt.raw), ratio, tt.atMost)
			}
		})
	}
}

func TestUnpackRefusesWhatPackDidNotMake(t *testing.T) {
	for _, bad := range [][]byte{{0xff, 0xff, 0xff}, Pack([]byte(`{"a":1}`))[:2]} {
		if _, err := Unpack(bad); err == nil {
			t.Errorf("Unpack(%x) = nil error", bad)
		}
	}
}

func BenchmarkPack(b *testing.B) {
	raw := []byte(`{"apiVersion":"v1","data":{"greeting":"hello from Git","index":"42","value":"git"},"kind":"ConfigMap","metadata":{"labels":{"driftguard.io/guard":"shop"},"name":"cm-0042","namespace":"shop"}}`)
	for b.Loop() {
		Pack(raw)
	}
}

func BenchmarkUnpack(b *testing.B) {
	packed := Pack([]byte(`{"apiVersion":"v1","data":{"greeting":"hello from Git","index":"42","value":"git"},"kind":"ConfigMap","metadata":{"labels":{"driftguard.io/guard":"shop"},"name":"cm-0042","namespace":"shop"}}`))
	for b.Loop() {
		if _, err := Unpack(packed); err != nil {
			b.Fatal(err)
		}
	}
}
