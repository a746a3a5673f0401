// Package config embeds the generated CustomResourceDefinitions, for the
// guard's development cluster and its tests; the chart ships the same files.
package config

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

// CRDs holds crd/*.yaml.
//
//go:embed crd/*.yaml
var CRDs embed.FS

// WriteCRDs writes the CRDs into dir, for envtest to install.
func WriteCRDs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fs.WalkDir(CRDs, "crd", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := CRDs.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, d.Name()), b, 0o644)
	})
}
