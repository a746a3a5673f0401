package source

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
)

// pack builds a version 2 pack of objects (each: type, size in the header,
// extra header bytes, content to compress) and a trailer.
func pack(t *testing.T, objects ...[4]any) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("PACK")
	_ = binary.Write(&b, binary.BigEndian, uint32(2))
	_ = binary.Write(&b, binary.BigEndian, uint32(len(objects)))
	for _, o := range objects {
		typ, size, extra, content := o[0].(int), o[1].(int), o[2].([]byte), o[3].([]byte)
		c := byte(typ<<4) | byte(size&0x0f)
		size >>= 4
		for size > 0 {
			b.WriteByte(c | 0x80)
			c = byte(size & 0x7f)
			size >>= 7
		}
		b.WriteByte(c)
		b.Write(extra)
		zw := zlib.NewWriter(&b)
		if _, err := zw.Write(content); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b.Write(make([]byte, 20))
	return b.Bytes()
}

// varint is a delta header's size.
func varint(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// TestPackScanner: a pack whose last object is a delta declaring a
// terabyte fails the write that holds it, though it is the pack's last
// write; a pack within the bound passes, written in one piece or byte by
// byte; a blob beyond the bound fails by its header.
func TestPackScanner(t *testing.T) {
	blob := [4]any{3, 5, []byte{}, []byte("hello")}
	bomb := [4]any{7, 12, make([]byte, 20), append(append(varint(5), varint(1<<40)...), 0x01)}
	big := [4]any{3, 100, []byte{}, bytes.Repeat([]byte{0}, 100)}
	for _, tc := range []struct {
		name    string
		data    []byte
		chunk   int
		refused bool
	}{
		{"within the bound", pack(t, blob, blob), 0, false},
		{"within the bound, a byte a write", pack(t, blob, blob), 1, false},
		{"a delta making a terabyte, last", pack(t, blob, bomb), 0, true},
		{"a blob beyond the bound", pack(t, big, blob), 7, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var over atomic.Bool
			s := newPackScanner(64, &over)
			var err error
			chunk := tc.chunk
			if chunk == 0 {
				chunk = len(tc.data)
			}
			for i := 0; i < len(tc.data) && err == nil; i += chunk {
				err = s.write(tc.data[i:min(i+chunk, len(tc.data))])
			}
			s.close()
			if refused := errors.Is(err, errObjectTooLarge); refused != tc.refused || over.Load() != tc.refused {
				t.Fatalf("write error %v, over %v; want refused %v", err, over.Load(), tc.refused)
			}
		})
	}
}
