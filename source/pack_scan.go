package source

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// errObjectTooLarge is a pack object that inflates to more than a fetch
// allows.
var errObjectTooLarge = errors.New("a Git object of the pack is too large")

// packScanner reads a pack as it is written, in a goroutine of its own,
// and fails the writes from the first object that inflates to more than
// max bytes: a whole object by its header, a delta by the size of the
// object it makes (the first varints of its data). Each object is inflated
// into nothing, a few kilobytes at a time. A write returns once the
// scanner has read all of it and waits for more, so the object a write
// completes is checked before the write returns, the pack's last one too
// (go-git inflates them all when the pack is closed).
type packScanner struct {
	chunks chan []byte   // to the scanner
	taken  chan struct{} // the scanner has read the chunk sent and wants more
	done   chan struct{} // the scanner has stopped; err says why
	err    error
	once   sync.Once
}

func newPackScanner(max int64, over *atomic.Bool) *packScanner {
	s := &packScanner{chunks: make(chan []byte), taken: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		in := &chunkReader{s: s}
		err := scanPack(bufio.NewReaderSize(in, 32<<10), max)
		if errors.Is(err, errObjectTooLarge) {
			over.Store(true)
			s.err = err
			return
		}
		// Anything else (a pack go-git will refuse itself, or one cut
		// short) is go-git's to report: take the rest unread.
		if in.pending {
			s.taken <- struct{}{}
		}
		for range s.chunks {
			s.taken <- struct{}{}
		}
	}()
	return s
}

// write hands p to the scanner and waits until it has read it.
func (s *packScanner) write(p []byte) error {
	select {
	case s.chunks <- p:
	case <-s.done:
		return s.err
	}
	select {
	case <-s.taken:
		return nil
	case <-s.done:
		return s.err
	}
}

// close ends the pack (the scanner reads its end) and waits for the
// scanner to stop; a fetch that failed before go-git closed its file
// closes it too (budget.stop).
func (s *packScanner) close() {
	s.once.Do(func() { close(s.chunks) })
	<-s.done
}

// chunkReader is the scanner's side of write: it reads the chunks written,
// telling the writer a chunk was read when it asks for the next.
type chunkReader struct {
	s       *packScanner
	cur     []byte
	pending bool // a chunk was received and not yet acknowledged
}

func (r *chunkReader) Read(b []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.pending {
			r.s.taken <- struct{}{}
			r.pending = false
		}
		c, ok := <-r.s.chunks
		if !ok {
			return 0, io.EOF
		}
		r.cur, r.pending = c, true
	}
	n := copy(b, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// The pack object types of deltas (gitformat-pack); any other is checked
// by the size in its header.
const (
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
		if typ != packOFSDelta && typ != packREFDelta && size > max {
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
