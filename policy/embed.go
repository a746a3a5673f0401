package policy

import (
	"embed"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"strings"
)

//go:embed default/*.rego
var defaultFS embed.FS

// DefaultModules returns the embedded default policy, file name -> source,
// including its tests (decision_test.rego); Load skips the tests.
func DefaultModules() map[string]string {
	entries, err := fs.ReadDir(defaultFS, "default")
	if err != nil {
		panic("policy: embedded default policy missing: " + err.Error()) // cannot happen: go:embed checked it
	}
	modules := make(map[string]string, len(entries))
	for _, ent := range entries {
		src, err := fs.ReadFile(defaultFS, path.Join("default", ent.Name()))
		if err != nil {
			panic("policy: read embedded " + ent.Name() + ": " + err.Error())
		}
		modules[ent.Name()] = string(src)
	}
	return modules
}

// IsDefault reports whether modules are the default policy: the same Rego
// files, tests aside, by name and content (wherever they were read from).
func IsDefault(modules map[string]string) bool {
	strip := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for name, src := range m {
			base := path.Base(filepath.ToSlash(name))
			if !strings.HasSuffix(base, "_test.rego") {
				out[base] = strings.TrimSpace(src)
			}
		}
		return out
	}
	return maps.Equal(strip(modules), strip(DefaultModules()))
}
