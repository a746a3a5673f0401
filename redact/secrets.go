package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// MinSecretLen is the shortest value the scrubber looks for, in bytes. A
// shorter value ("true", "1", "prod", "admin", "default") is ignored: it
// would turn every occurrence of a common word into the marker and so make
// records, messages and names unreadable. 8 bytes is the shortest password
// most policies accept; a shorter value from a Secret is still hidden where
// it is a Secret's own data (drift.RedactValue), but not elsewhere.
const MinSecretLen = 8

// Marker replaces a secret value wherever it would leave the process.
const Marker = "<redacted>"

// Bounds of what one owner (a Guard's revision) may register: beyond
// them, Set reports false and the caller must not publish what it could
// not protect (package render fails the render).
const (
	MaxSecretValues = 10000
	MaxSecretBytes  = 8 << 20
)

// Sensitive is a set of values one producer (a render) marks as secret:
// values decrypted from SOPS files, variables substituted from Secrets,
// the data of Secrets. The zero value is empty and ready; it is safe for
// concurrent use.
type Sensitive struct {
	mu     sync.Mutex
	values map[string]struct{}
	bytes  int
}

// Add marks s as sensitive; values shorter than MinSecretLen are ignored.
func (v *Sensitive) Add(s string) {
	if len(s) < MinSecretLen || v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.values[s]; ok {
		return
	}
	if v.values == nil {
		v.values = map[string]struct{}{}
	}
	v.values[s] = struct{}{}
	v.bytes += len(s)
}

// AddValue marks every string leaf of a JSON-like value (string, []byte,
// map[string]any, []any; numbers and booleans by their text).
func (v *Sensitive) AddValue(x any) {
	switch x := x.(type) {
	case string:
		v.Add(x)
	case []byte:
		v.Add(string(x))
	case map[string]any:
		for _, e := range x {
			v.AddValue(e)
		}
	case []any:
		for _, e := range x {
			v.AddValue(e)
		}
	case int:
		v.Add(strconv.Itoa(x))
	case int64:
		v.Add(strconv.FormatInt(x, 10))
	case float64:
		v.Add(strconv.FormatFloat(x, 'f', -1, 64))
	}
}

// Len is the number of values, Size their bytes.
func (v *Sensitive) Len() int {
	if v == nil {
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.values)
}

// Size is the bytes of the values.
func (v *Sensitive) Size() int {
	if v == nil {
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.bytes
}

// List returns the values, sorted.
func (v *Sensitive) List() []string {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Sorted(maps.Keys(v.values))
}

// Scrub replaces the values of v (and their encodings, see Registry) in s;
// for a producer's own messages (a render error) before any registry knows
// them.
func (v *Sensitive) Scrub(s string) string {
	if v.Len() == 0 {
		return s
	}
	return newIndex(v.List()).scrubString(s)
}

// Registry holds the sensitive values of every owner (a Guard, by name)
// and takes them out of text that leaves the process. Reads are lock-free
// (an immutable index behind an atomic pointer); Set rebuilds the index.
type Registry struct {
	mu     sync.Mutex
	owners map[string][]string
	idx    atomic.Pointer[index]
}

// Secrets is the process's registry: the Guards' snapshots register their
// values (render.Store), and every sink (audit records, Events,
// notifications, admission messages, Guard status, the CLI's output, the
// process log) scrubs what it sends with it.
var Secrets = &Registry{}

// Set replaces the values of owner: those of the revision now in force.
// Values no longer held by any owner are forgotten. An empty list removes
// the owner. It reports false, and keeps the owner's values as they were,
// when values exceed MaxSecretValues or MaxSecretBytes.
func (r *Registry) Set(owner string, values []string) bool {
	kept := make([]string, 0, len(values))
	size := 0
	for _, v := range values {
		if len(v) >= MinSecretLen {
			kept = append(kept, v)
			size += len(v)
		}
	}
	if len(kept) > MaxSecretValues || size > MaxSecretBytes {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(kept) == 0 {
		if _, ok := r.owners[owner]; !ok {
			return true
		}
		delete(r.owners, owner)
	} else {
		slices.Sort(kept)
		kept = slices.Compact(kept)
		if slices.Equal(r.owners[owner], kept) {
			return true
		}
		if r.owners == nil {
			r.owners = map[string][]string{}
		}
		r.owners[owner] = kept
	}
	var all []string
	for _, vs := range r.owners {
		all = append(all, vs...)
	}
	if len(all) == 0 {
		r.idx.Store(nil)
	} else {
		r.idx.Store(newIndex(all))
	}
	return true
}

// Forget removes owner's values.
func (r *Registry) Forget(owner string) { r.Set(owner, nil) }

// Len is the number of patterns the scrubber looks for (values and their
// encodings).
func (r *Registry) Len() int {
	if x := r.idx.Load(); x != nil {
		return x.n
	}
	return 0
}

// String returns s with every registered value replaced by Marker; s
// itself when none occurs (no allocation).
func (r *Registry) String(s string) string {
	x := r.idx.Load()
	if x == nil {
		return s
	}
	return x.scrubString(s)
}

// Bytes returns b with every registered value replaced by Marker; b
// itself when none occurs.
func (r *Registry) Bytes(b []byte) []byte {
	x := r.idx.Load()
	if x == nil {
		return b
	}
	return x.scrubBytes(b)
}

// Active reports whether any value is registered: callers may skip work
// (walking a record) when not.
func (r *Registry) Active() bool { return r.idx.Load() != nil }

// forms are the texts a value may take where it leaves: as it is; as a
// JSON or Go string writes it (quotes, backslashes, control characters and,
// for encoding/json's default, <, > and & escaped); base64 (Secret data),
// without padding so that both padded and unpadded forms match; and each
// of its lines of MinSecretLen bytes or more (a diff prints a multi-line
// value line by line).
func forms(v string) []string {
	out := []string{v, base64.RawStdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v))}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b[1:len(b)-1]))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		out = append(out, string(b[1:len(b)-1]))
	}
	q := strconv.Quote(v)
	out = append(out, q[1:len(q)-1])
	if strings.ContainsAny(v, "\r\n") {
		for line := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == '\n' || r == '\r' }) {
			if line = strings.TrimSpace(line); len(line) >= MinSecretLen {
				out = append(out, line)
			}
		}
	}
	return out
}

// index finds patterns (all at least MinSecretLen bytes long) in a text:
// a bit per two-byte prefix rules out most positions at once, then the
// first eight bytes pick the candidates from a map.
type index struct {
	first [1 << 16 / 64]uint64 // bit set for each pattern's first two bytes
	byKey map[uint64][]string  // patterns by their first eight bytes, longest first
	n     int
}

func newIndex(values []string) *index {
	x := &index{byKey: map[uint64][]string{}}
	seen := map[string]bool{}
	for _, v := range values {
		for _, f := range forms(v) {
			if len(f) < MinSecretLen || seen[f] {
				continue
			}
			seen[f] = true
			p := uint16(f[0])<<8 | uint16(f[1])
			x.first[p/64] |= 1 << (p % 64)
			k := binary.LittleEndian.Uint64([]byte(f[:8]))
			x.byKey[k] = append(x.byKey[k], f)
			x.n++
		}
	}
	for _, ps := range x.byKey {
		slices.SortFunc(ps, func(a, b string) int { return len(b) - len(a) })
	}
	return x
}

// next returns the first position at or after i where a pattern may
// start (its first two bytes are some pattern's), len(s) when none.
func (x *index) next(s string, i int) int {
	for end := len(s) - MinSecretLen; i <= end; i++ {
		p := uint16(s[i])<<8 | uint16(s[i+1])
		if x.first[p>>6]&(1<<(p&63)) != 0 {
			return i
		}
	}
	return len(s)
}

// match returns the length of the longest pattern at s[i:], 0 if none.
func (x *index) match(s string, i int) int {
	k := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	for _, c := range x.byKey[k] {
		if strings.HasPrefix(s[i:], c) {
			return len(c)
		}
	}
	return 0
}

func (x *index) scrubString(s string) string {
	var out strings.Builder // empty until the first match
	last := 0
	for i := x.next(s, 0); i+MinSecretLen <= len(s); i = x.next(s, i) {
		n := x.match(s, i)
		if n == 0 {
			i++
			continue
		}
		if out.Len() == 0 {
			out.Grow(len(s))
		}
		out.WriteString(s[last:i])
		out.WriteString(Marker)
		i += n
		last = i
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

func (x *index) scrubBytes(b []byte) []byte {
	// The scan reads b as a string without copying it.
	s := unsafeString(b)
	var out []byte
	last := 0
	for i := x.next(s, 0); i+MinSecretLen <= len(s); i = x.next(s, i) {
		n := x.match(s, i)
		if n == 0 {
			i++
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(append(out, b[last:i]...), Marker...)
		i += n
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Writer returns a writer that scrubs each Write with the registry before
// w sees it. A value split across two Writes is not found: use it where
// every Write is a whole line or message (a log encoder, fmt.Fprintf).
func (r *Registry) Writer(w io.Writer) io.Writer { return &scrubWriter{r: r, w: w} }

type scrubWriter struct {
	r *Registry
	w io.Writer
}

func (s *scrubWriter) Write(p []byte) (int, error) {
	if _, err := s.w.Write(s.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Sync flushes w when it can (a zap WriteSyncer).
func (s *scrubWriter) Sync() error {
	if f, ok := s.w.(interface{ Sync() error }); ok {
		return f.Sync()
	}
	return nil
}
