package source

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// errObjectTooLarge is a pack object that inflates to more than a fetch
// allows.
var errObjectTooLarge = errors.New("a Git object of the pack is too large")

// packScanner reads a pack as it is written (write), in a goroutine of its
// own, and fails the writes from the first object that inflates to more
// than max bytes: a blob, tree, commit or tag by its header, a delta by
// the size of the object it makes (the first varints of its data). Each
// object is inflated into nothing, a few kilobytes at a time.
type packScanner struct {
	pw   *io.PipeWriter
	done chan struct{}
}

func newPackScanner(max int64, over *atomic.Bool) *packScanner {
	pr, pw := io.Pipe()
	s := &packScanner{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := scanPack(bufio.NewReaderSize(pr, 32<<10), max)
		if errors.Is(err, errObjectTooLarge) {
			over.Store(true)
			pr.CloseWithError(err)
			return
		}
		// Anything else (a pack go-git will refuse itself, or one cut
		// short) is go-git's to report: read on.
		_, _ = io.Copy(io.Discard, pr)
	}()
	return s
}

func (s *packScanner) write(p []byte) error {
	_, err := s.pw.Write(p)
	return err
}

func (s *packScanner) close() {
	_ = s.pw.Close()
	<-s.done
}

// Pack object types (gitformat-pack).
const (
	packCommit   = 1
	packTag      = 4
	packOFSDelta = 6
	packREFDelta = 7
)

// scanPack reads a pack's objects, returning errObjectTooLarge at the
// first that inflates to more than max bytes.
func scanPack(r *bufio.Reader, max int64) error {
	var hdr [12]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	if !bytes.Equal(hdr[:4], []byte("PACK")) {
		return errors.New("not a pack")
	}
	count := binary.BigEndian.Uint32(hdr[8:])
	var zr io.ReadCloser
	var content *bufio.Reader
	for range count {
		c, err := r.ReadByte()
		if err != nil {
			return err
		}
		typ, size, shift := (c>>4)&7, int64(c&0x0f), uint(4)
		for c&0x80 != 0 {
			if c, err = r.ReadByte(); err != nil {
				return err
			}
			if shift > 56 {
				return errors.New("object size out of range")
			}
			size |= int64(c&0x7f) << shift
			shift += 7
		}
		switch typ {
		case packOFSDelta:
			for c = 0x80; c&0x80 != 0; {
				if c, err = r.ReadByte(); err != nil {
					return err
				}
			}
		case packREFDelta:
			if _, err := r.Discard(20); err != nil {
				return err
			}
		}
		if typ >= packCommit && typ <= packTag && size > max {
			return fmt.Errorf("%w: %d bytes", errObjectTooLarge, size)
		}
		if zr == nil {
			zr, err = zlib.NewReader(r)
		} else {
			err = zr.(zlib.Resetter).Reset(r, nil)
		}
		if err != nil {
			return err
		}
		if content == nil {
			content = bufio.NewReaderSize(zr, 4<<10)
		} else {
			content.Reset(zr)
		}
		if typ == packOFSDelta || typ == packREFDelta {
			// The delta's data starts with the sizes of its base and of
			// the object it makes.
			if _, err := readVarint(content); err != nil {
				return err
			}
			target, err := readVarint(content)
			if err != nil {
				return err
			}
			if target > max {
				return fmt.Errorf("%w: a delta makes %d bytes", errObjectTooLarge, target)
			}
		}
		if _, err := io.Copy(io.Discard, content); err != nil {
			return err
		}
	}
	return nil
}

// readVarint reads a delta header's size (little-endian base-128).
func readVarint(r io.ByteReader) (int64, error) {
	var v int64
	for shift := uint(0); ; shift += 7 {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if shift > 56 {
			return 0, errors.New("delta size out of range")
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
}
