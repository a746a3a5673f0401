package source

import (
	"errors"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-billy/v5"
)

// A Git fetch streams the pack the server sends into a file of the cache
// repository as it arrives (go-git's filesystem storage writes it there
// while it indexes it). budgetFS bounds the bytes written to the cache
// while a fetch runs, so a pack of gigabytes (Git compresses: a commit of
// a gigabyte of zeros is a megabyte on the wire, but a server can send any
// pack it likes) fails the fetch at the limit instead of filling the disk.

// errOverBudget is the write that went beyond a fetch's budget.
var errOverBudget = errors.New("the fetch went beyond its size limit")

// budget is the bytes a fetch may still write to the cache; writes are
// counted only while a fetch runs (between start and stop). The packs it
// writes are read as they are written: an object that inflates to more
// than maxObject bytes fails the write (objectOver).
type budget struct {
	active, over, objectOver atomic.Bool
	left                     atomic.Int64
	maxObject                atomic.Int64

	mu       sync.Mutex
	scanners []*packScanner // of the packs this fetch wrote
}

func (b *budget) start(n, maxObject int64) {
	b.left.Store(n)
	b.maxObject.Store(maxObject)
	b.over.Store(false)
	b.objectOver.Store(false)
	b.active.Store(true)
}

// stop ends the fetch: its pack scanners are closed (go-git does not close
// the file of a pack it failed to index).
func (b *budget) stop() {
	b.active.Store(false)
	b.mu.Lock()
	scanners := b.scanners
	b.scanners = nil
	b.mu.Unlock()
	for _, s := range scanners {
		s.close()
	}
}

// take counts n bytes, false when they go beyond the budget.
func (b *budget) take(n int) bool {
	if !b.active.Load() {
		return true
	}
	if b.left.Add(-int64(n)) < 0 {
		b.over.Store(true)
		return false
	}
	return true
}

type budgetFS struct {
	billy.Filesystem
	b *budget
}

func (fs budgetFS) Create(name string) (billy.File, error) {
	f, err := fs.Filesystem.Create(name)
	return fs.wrap(f, err)
}

func (fs budgetFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	f, err := fs.Filesystem.OpenFile(name, flag, perm)
	return fs.wrap(f, err)
}

func (fs budgetFS) TempFile(dir, prefix string) (billy.File, error) {
	f, err := fs.Filesystem.TempFile(dir, prefix)
	if err != nil || !fs.b.active.Load() || !strings.HasPrefix(prefix, "tmp_pack") {
		return fs.wrap(f, err)
	}
	// go-git's filesystem storage writes a fetched pack to a temporary
	// file, and inflates each of its objects whole while it indexes it:
	// the scanner refuses an object too large before that.
	scan := newPackScanner(fs.b.maxObject.Load(), &fs.b.objectOver)
	fs.b.mu.Lock()
	fs.b.scanners = append(fs.b.scanners, scan)
	fs.b.mu.Unlock()
	return budgetFile{File: f, b: fs.b, scan: scan}, nil
}

func (fs budgetFS) wrap(f billy.File, err error) (billy.File, error) {
	if err != nil {
		return nil, err
	}
	return budgetFile{File: f, b: fs.b}, nil
}

type budgetFile struct {
	billy.File
	b    *budget
	scan *packScanner // of a pack being fetched
}

func (f budgetFile) Write(p []byte) (int, error) {
	if !f.b.take(len(p)) {
		return 0, errOverBudget
	}
	if f.scan != nil {
		if err := f.scan.write(p); err != nil {
			return 0, err
		}
	}
	return f.File.Write(p)
}

func (f budgetFile) Close() error {
	if f.scan != nil {
		f.scan.close()
	}
	return f.File.Close()
}

// removeTempPacks removes what a fetch that failed left of its pack.
func removeTempPacks(fs billy.Filesystem) {
	dir := path.Join("objects", "pack")
	entries, err := fs.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "tmp_") {
			_ = fs.Remove(path.Join(dir, e.Name()))
		}
	}
}
