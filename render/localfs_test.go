package render

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestLocalFS(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for p, c := range map[string]string{"a/cm.yaml": "cm", "b/c/x.yaml": "x"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"out":           outside,
		"a/secret.yaml": filepath.Join(outside, "secret.yaml"),
		"a/up.yaml":     "../../" + filepath.Base(outside) + "/secret.yaml",
		"a/in.yaml":     "cm.yaml",
		"b/c/back":      "../../a",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	l, err := OpenLocalFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	tests := []struct {
		name        string
		want        string // content; "" for an error
		wantLink    string
		wantOutside bool
	}{
		{"a/cm.yaml", "cm", "", false},
		{"b/c/x.yaml", "x", "", false},
		{"out/secret.yaml", "", "out", true},
		{"a/secret.yaml", "", "a/secret.yaml", true},
		{"a/up.yaml", "", "a/up.yaml", true},
		{"a/in.yaml", "", "a/in.yaml", false},
		{"b/c/back/cm.yaml", "", "b/c/back", false},
	}
	for _, tt := range tests {
		data, err := fs.ReadFile(l, tt.name)
		if tt.want != "" {
			if err != nil || string(data) != tt.want {
				t.Errorf("%s: %q, %v; want %q", tt.name, data, err, tt.want)
			}
			continue
		}
		var se *SymlinkError
		if !errors.As(err, &se) || se.Link != tt.wantLink || se.Outside != tt.wantOutside {
			t.Errorf("%s: %q, %v; want a SymlinkError of %s (outside %v)", tt.name, data, err, tt.wantLink, tt.wantOutside)
		}
	}
	// A walk lists links as links and does not go through them.
	var seen []string
	err = fs.WalkDir(l, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			seen = append(seen, p)
		}
		return nil
	})
	if err != nil || len(seen) != 5 {
		t.Errorf("walk: links %v, %v; want the 5 links, not followed", seen, err)
	}
}
