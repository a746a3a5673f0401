package jsonpack

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// workers bounds how many objects are packed or unpacked at once (more
// wait): each encoder and decoder keeps its tables and buffers.
var workers = min(runtime.GOMAXPROCS(0), 4)

// The encoder and decoder are made once; both are safe for concurrent use.
// The dictionary is raw content (history the first bytes of every object
// can refer back into); its ID, 0, is left out of every frame. A frame has
// no checksum: packed bytes never leave the process. A 32 KiB window (the
// dictionary and most objects whole) and the low-memory modes keep the
// coders' own memory at about 1.5 MiB for two workers, against 10 MiB with
// the defaults, at the same speed.
var (
	encoder = must(zstd.NewWriter(nil,
		zstd.WithEncoderDictRaw(0, dictionary),
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(workers),
		zstd.WithWindowSize(1<<15),
		zstd.WithLowerEncoderMem(true),
		zstd.WithEncoderCRC(false),
		zstd.WithSingleSegment(true),
		zstd.WithZeroFrames(true)))
	decoder = must(zstd.NewReader(nil,
		zstd.WithDecoderDictRaw(0, dictionary),
		zstd.WithDecoderConcurrency(workers),
		zstd.WithDecoderLowmem(true)))
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err) // only for invalid options, which are constants
	}
	return v
}

// scratch holds the buffers Pack encodes into before it copies the result
// out at its size (a packed object is kept for long).
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// Pack returns raw packed. The same raw always packs to the same bytes, so
// packed forms compare as their JSON does.
func Pack(raw []byte) []byte {
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	*buf = encoder.EncodeAll(raw, (*buf)[:0])
	return bytes.Clone(*buf)
}

// Unpack returns the JSON that Pack packed into packed.
func Unpack(packed []byte) ([]byte, error) {
	raw, err := decoder.DecodeAll(packed, nil)
	if err != nil {
		return nil, fmt.Errorf("unpack JSON: %w", err)
	}
	return raw, nil
}
