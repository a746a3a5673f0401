package audit_test

import (
	"context"
	"os"
	"time"

	"github.com/driftguard/driftguard/audit"
)

// A denied `kubectl scale deployment web --replicas=5` as the stdout sink
// writes it (docs/audit.md shows the same record, indented).
func ExampleNewWriterSink() {
	r := audit.Record{
		Time:      time.Date(2026, 5, 6, 7, 8, 9, 123456000, time.UTC),
		Type:      audit.Decision,
		Guard:     "shop",
		User:      "alice@example.com",
		Groups:    []string{"dev", "system:authenticated"},
		Manager:   "kubectl",
		Operation: "UPDATE",
		Object:    audit.Object{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Fields:    []audit.Field{{Path: "/spec/replicas", Desired: 3, Live: 5}},
		Action:    "deny",
		Reason:    "shop/web is managed by Git; change apps/web/deployment.yaml instead",
		Rule:      "data.driftguard.decision",
		Source: &audit.Source{URL: "https://git.example/infra.git", Revision: "9f2c1e0",
			Path: "apps/web/deployment.yaml", Line: 1},
		PolicyRevision: "b41d7aa",
		RequestUID:     "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
		DurationMS:     2.4,
	}
	_ = audit.NewWriterSink("stdout", os.Stdout).Write(context.Background(), []audit.Record{r})
	// Output:
	// {"time":"2026-05-06T07:08:09.123456Z","type":"decision","guard":"shop","user":"alice@example.com","groups":["dev","system:authenticated"],"manager":"kubectl","operation":"UPDATE","object":{"group":"apps","version":"v1","kind":"Deployment","namespace":"shop","name":"web"},"fields":[{"path":"/spec/replicas","desired":3,"live":5}],"action":"deny","reason":"shop/web is managed by Git; change apps/web/deployment.yaml instead","rule":"data.driftguard.decision","policyRevision":"b41d7aa","source":{"url":"https://git.example/infra.git","revision":"9f2c1e0","path":"apps/web/deployment.yaml","line":1},"requestUID":"3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","durationMs":2.4}
}
