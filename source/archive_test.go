package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name string
	typ  byte
	body string
}

func tgz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ == tar.TypeSymlink {
			hdr.Linkname, hdr.Size = "a.yaml", 0
		}
		if e.typ == tar.TypeDir {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUntar(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		want    []string
		wantErr string
	}{
		{"files and folders", tgz(t, entry{"./", tar.TypeDir, ""}, entry{"./a.yaml", tar.TypeReg, "a"}, entry{"sub/", tar.TypeDir, ""}, entry{"sub/b.yaml", tar.TypeReg, "b"}), []string{"a.yaml", "sub/b.yaml"}, ""},
		{"leaves the archive", tgz(t, entry{"../evil.yaml", tar.TypeReg, "x"}), nil, `entry "../evil.yaml" leaves the archive`},
		// A publisher's names reach conditions and logs quoted: a line
		// break or a terminal escape in a name stays visible text.
		{"a name with a line break", tgz(t, entry{"../a\n\x1b[2Jb.yaml", tar.TypeReg, "x"}), nil, `entry "../a\n\x1b[2Jb.yaml" leaves the archive`},
		{"absolute", tgz(t, entry{"/etc/passwd", tar.TypeReg, "x"}), nil, `entry "/etc/passwd" leaves the archive`},
		{"symlink", tgz(t, entry{"link.yaml", tar.TypeSymlink, ""}), nil, `entry "link.yaml" is not a regular file or folder`},
		{"not gzip", []byte("plain text"), nil, "not a gzip archive"},
		{"truncated", tgz(t, entry{"a.yaml", tar.TypeReg, strings.Repeat("a", 4096)})[:40], nil, ""},
		{"a file, then below it", tgz(t, entry{"a", tar.TypeReg, "x"}, entry{"a/b.yaml", tar.TypeReg, "y"}), nil, `entry "a/b.yaml" is below "a", which is a file`},
		{"a file, then as a folder", tgz(t, entry{"c/a/b.yaml", tar.TypeReg, "y"}, entry{"./c/a", tar.TypeReg, "x"}), nil, `entry "./c/a" is a file and the folder of an entry before it`},
		{"a path that is not UTF-8", tgz(t, entry{"long/n\xc9n.yaml", tar.TypeReg, "x"}), nil, `entry "long/n\xc9n.yaml" has a path that is not UTF-8`},
		{"a path longer than PATH_MAX", tgz(t, entry{strings.Repeat("a/", 2100) + "f.yaml", tar.TypeReg, "x"}), nil, "has a path of 4206 bytes, more than 4096"},
		// Each folder is kept, and each path walked up to its root: the
		// folders count with the files.
		{"paths thousands of folders deep", func() []byte {
			var es []entry
			for i := range 20 {
				es = append(es, entry{fmt.Sprintf("t%d/%sf.yaml", i, strings.Repeat("a/", 1500)), tar.TypeReg, ""})
			}
			return tgz(t, es...)
		}(), nil, "the archive holds more than 20000 files and folders"},
		{"the same file twice: the last", tgz(t, entry{"a.yaml", tar.TypeReg, "1"}, entry{"./a.yaml", tar.TypeReg, "2"}, entry{"sub/a.yaml", tar.TypeReg, "3"}), []string{"a.yaml", "sub/a.yaml"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := untar(bytes.NewReader(tt.data))
			if tt.want == nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tt.want) {
				t.Fatalf("files %v, want %v", files, tt.want)
			}
			for _, p := range tt.want {
				if _, ok := files[p]; !ok {
					t.Fatalf("no %s in %v", p, files)
				}
			}
		})
	}
}

func TestBlobStoreKeepsTheLastUsed(t *testing.T) {
	b := blobStore{dir: t.TempDir()}
	const owner = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	first, err := b.put(owner, []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxBlobs + 5 {
		if _, err := b.put(owner, []byte(strings.Repeat("x", i+1))); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 && b.get(owner, first) == nil { // used again and again: kept
			t.Fatalf("blob used last was removed at %d", i)
		}
	}
	entries, err := os.ReadDir(filepath.Join(b.dir, "sha256"))
	if err != nil || len(entries) != maxBlobs {
		t.Fatalf("%d blobs kept (%v), want %d", len(entries), err, maxBlobs)
	}
	if b.get(owner, first) == nil {
		t.Fatal("the blob used last is gone")
	}
	if err := os.WriteFile(b.path(owner, first), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b.get(owner, first) != nil {
		t.Fatal("a blob that no longer matches its digest was returned")
	}
	// Kept for one owner (a source with its credentials), a blob is
	// nobody else's.
	d, err := b.put(owner, []byte("private"))
	if err != nil {
		t.Fatal(err)
	}
	if b.get(owner, d) == nil {
		t.Fatal("the owner lost its blob")
	}
	if b.get("fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", d) != nil || b.get("", d) != nil {
		t.Fatal("another owner got the blob")
	}
}
