package source

import (
	"testing"
	"testing/fstest"
	"time"
)

func TestMemFS(t *testing.T) {
	m := newMemFS(map[string][]byte{
		"a.yaml":                   []byte("a"),
		"apps/web/deploy.yaml":     []byte("deploy"),
		"apps/web/service.yaml":    []byte("svc"),
		"apps/db/statefulset.yaml": []byte("sts"),
	}, time.Unix(0, 0))
	if err := fstest.TestFS(m, "a.yaml", "apps/web/deploy.yaml", "apps/web/service.yaml", "apps/db/statefulset.yaml"); err != nil {
		t.Fatal(err)
	}
}
