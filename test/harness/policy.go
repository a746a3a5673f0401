package harness

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/driftguard/driftguard/policy"
)

// WriteDefaultPolicy writes the built-in policy's modules into dir, a
// policy folder (--policy-dir) that serves as the built-in policy does;
// extra modules, named by file, are written beside them.
func WriteDefaultPolicy(dir string, extra map[string]string) error {
	files := policy.DefaultModules()
	for name, src := range extra {
		files[name] = src
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), []byte(src), 0o644); err != nil {
			return fmt.Errorf("policy module %s: %w", name, err)
		}
	}
	return nil
}
