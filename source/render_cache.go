package source

import "github.com/driftguard/driftguard/render"

// RenderKey is what a snapshot is rendered from besides the revision: the
// path and the render options.
type RenderKey struct {
	dir  string // cleaned path
	opts string // RenderOptions.Hash
}

// RenderKeyOf is the key of what req renders.
func RenderKeyOf(req Request) RenderKey {
	return RenderKey{dir: render.CleanDir(req.Path), opts: req.Render.Hash()}
}

// Dir is the key's path, cleaned into an fs.FS path ("." for the root).
func (k RenderKey) Dir() string { return k.dir }

// Rendered is the outcome of rendering one path at one revision: a
// snapshot, or a render error, kept so that a bad revision is not rendered
// again.
type Rendered struct {
	Revision string
	Snap     *render.Snapshot
	Err      error
	// Capabilities is what the render asked RenderOptions.Helm's
	// CapabilitiesFrom for (RenderAsked); "" when it asked nothing.
	Capabilities string
	used         uint64
}

// Current reports whether the outcome still holds for req (of the same
// RenderKey): a render that asked for the cluster's capabilities holds
// while they are the same. When they cannot be asked now, the outcome is
// kept.
func (r *Rendered) Current(req Request) bool {
	if r.Capabilities == "" {
		return true
	}
	from := req.Render.Helm.CapabilitiesFrom
	if req.Render.Helm.Capabilities != nil || from == nil {
		return false
	}
	c, err := from()
	return err != nil || c.Digest() == r.Capabilities
}

// maxRendered bounds the outcomes a RenderCache keeps: one per (path,
// options) in use, so options that changed (new variables) do not pile up.
const maxRendered = 16

// RenderCache keeps the last outcome per RenderKey of one source, dropping
// the least recently used beyond maxRendered. It is not safe for
// concurrent use: its owner serializes fetches of the source.
type RenderCache struct {
	last map[RenderKey]*Rendered
	tick uint64 // counts uses, to find the least recently used entry
}

// Get returns the outcome kept for k, nil when there is none.
func (c *RenderCache) Get(k RenderKey) *Rendered {
	r := c.last[k]
	if r != nil {
		c.tick++
		r.used = c.tick
	}
	return r
}

// Put keeps r as the outcome of k.
func (c *RenderCache) Put(k RenderKey, r *Rendered) {
	if c.last == nil {
		c.last = map[RenderKey]*Rendered{}
	}
	c.tick++
	r.used = c.tick
	c.last[k] = r
	for len(c.last) > maxRendered {
		var oldest RenderKey
		var at uint64
		for key, e := range c.last {
			if at == 0 || e.used < at {
				oldest, at = key, e.used
			}
		}
		delete(c.last, oldest)
	}
}
