package e2e

import (
	"fmt"
	"os"
	"testing"
)

func namespace(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", name)
}

func configMap(ns, name, value string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
data:
  value: %q
`, name, ns, value)
}

func deployment(ns, name string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {app: %[2]s}
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: app
        image: nginx:1.27
`, ns, name, replicas)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
