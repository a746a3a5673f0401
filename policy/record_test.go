package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRecordedGuardSpec(t *testing.T) {
	tests := []struct {
		name, spec string
		hidden     []string // must not appear
		kept       []string // must appear
	}{
		{"helm values digested", `{"url":"https://git.example/r.git","helm":{"releaseName":"web","values":{"db":{"password":"helm-values-secret"}}}}`,
			[]string{"helm-values-secret", `"password"`}, []string{`"releaseName":"web"`, `"values":"sha256:`, `"url":"https://git.example/r.git"`}},
		{"vars digested, names kept", `{"vars":{"DB_PASS":"spec-var-secret"},"varsFrom":[{"kind":"Secret","name":"db"}]}`,
			[]string{"spec-var-secret"}, []string{`"DB_PASS":"sha256:`, `"varsFrom":[{"kind":"Secret","name":"db"}]`}},
		{"nothing to hide", `{"enforcement":"warn","policyData":{"team":"shop"}}`, nil, []string{`"enforcement":"warn"`, `"team":"shop"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			if err := json.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			before, _ := json.Marshal(spec)
			b, err := json.Marshal(RecordedGuardSpec(spec))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.hidden {
				if strings.Contains(string(b), h) {
					t.Errorf("recorded spec %s holds %s", b, h)
				}
			}
			for _, k := range tt.kept {
				if !strings.Contains(string(b), k) {
					t.Errorf("recorded spec %s lacks %s", b, k)
				}
			}
			if after, _ := json.Marshal(spec); string(after) != string(before) {
				t.Errorf("the Guard's spec was changed: %s", after)
			}
		})
	}
}
