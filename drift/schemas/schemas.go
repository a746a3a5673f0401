// Package schemas reads the structure of each kind from the API server's
// OpenAPI v3 (as server-side apply uses it: list types, map keys, patch
// merge keys, defaults of key fields) for the drift comparison, cached per
// kind. It is the comparison's only source of I/O; package drift stays pure.
package schemas

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/driftguard/driftguard/drift"
)

const (
	// Settle is how long after Forget a group's documents are asked again
	// (every RetryMissing) whether they changed: the API server publishes
	// a changed definition's schema a moment after it is established.
	Settle = time.Minute
	// RetryMissing is how long a kind the API server does not serve (yet:
	// a CRD just applied) or an error is remembered before asking again.
	RetryMissing = 5 * time.Second
	// fetchTimeout bounds one read of the index or of a group version.
	fetchTimeout = 30 * time.Second
)

// Cache holds the schemas of the kinds asked for. The zero value is not
// usable; a nil *Cache answers with drift.BuiltinSchema.
type Cache struct {
	client openapi.ClientWithContext
	log    logr.Logger
	now    func() time.Time

	mu  sync.Mutex
	gvs map[schema.GroupVersion]*groupVersion

	kmu   sync.RWMutex
	kinds map[schema.GroupVersionKind]kindEntry
}

type kindEntry struct {
	schema *drift.Schema
	until  time.Time // ask the group version again after; zero: never
}

// groupVersion is one group version's OpenAPI document, converted.
type groupVersion struct {
	mu      sync.Mutex // held while reading it
	url     string     // the document's URL with its hash, "" when unread
	tc      managedfields.TypeConverter
	checked time.Time
	settle  time.Time // until when to ask again every RetryMissing (Forget)
	err     error
}

// New returns a cache reading the OpenAPI v3 of the API server d talks to.
func New(d discovery.OpenAPIV3SchemaInterface, log logr.Logger) *Cache {
	return &Cache{client: openapi.ToClientWithContext(d.OpenAPIV3()), log: log, now: time.Now,
		gvs: map[schema.GroupVersion]*groupVersion{}, kinds: map[schema.GroupVersionKind]kindEntry{}}
}

// For returns the schema of kind gvk as the API server serves it. While the
// server's cannot be read (or it does not serve the kind) it is the one
// client-go compiles in for a built-in kind, nil for any other, which the
// comparison reads as "no schema" (drift.Options.Schema). Safe for
// concurrent use; after the first read of a group version it costs a map
// lookup and makes no request, and a refresh never blocks a caller that has
// a schema to use. A group's schemas are read again after Forget.
func (c *Cache) For(gvk schema.GroupVersionKind) *drift.Schema {
	if c == nil {
		return drift.BuiltinSchema(gvk)
	}
	now := c.now()
	c.kmu.RLock()
	e, ok := c.kinds[gvk]
	c.kmu.RUnlock()
	if ok && (e.until.IsZero() || now.Before(e.until)) {
		return e.schema
	}
	gv := c.groupVersion(gvk.GroupVersion())
	if ok && !gv.mu.TryLock() {
		return e.schema // being refreshed; the last answer meanwhile
	} else if !ok {
		gv.mu.Lock()
	}
	s, until := c.refresh(gv, gvk)
	gv.mu.Unlock()
	c.kmu.Lock()
	c.kinds[gvk] = kindEntry{schema: s, until: until}
	c.kmu.Unlock()
	return s
}

func (c *Cache) groupVersion(gv schema.GroupVersion) *groupVersion {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.gvs[gv]
	if !ok {
		g = &groupVersion{}
		c.gvs[gv] = g
	}
	return g
}

// Forget makes the schemas of group be read again (when the document
// changed: its hash), as they are asked for: the guard calls it when it has
// applied a CustomResourceDefinition of the group. A definition changed by
// others is read again when the guard restarts or applies one of its group.
func (c *Cache) Forget(group string) {
	if c == nil {
		return
	}
	now := c.now()
	c.mu.Lock()
	for gv, g := range c.gvs {
		if gv.Group == group {
			g.mu.Lock()
			g.checked, g.settle = time.Time{}, now.Add(Settle)
			g.mu.Unlock()
		}
	}
	c.mu.Unlock()
	c.kmu.Lock()
	for gvk := range c.kinds {
		if gvk.Group == group {
			delete(c.kinds, gvk)
		}
	}
	c.kmu.Unlock()
}

// refresh brings gv up to date when due (gv.mu held) and returns gvk's
// schema and until when to use it (zero: until Forget).
func (c *Cache) refresh(g *groupVersion, gvk schema.GroupVersionKind) (*drift.Schema, time.Time) {
	now := c.now()
	retry := g.tc == nil || now.Before(g.settle)
	if g.checked.IsZero() || (retry && now.Sub(g.checked) >= RetryMissing) {
		g.checked = now
		if err := c.read(g, gvk.GroupVersion()); err != nil {
			if g.err == nil || g.err.Error() != err.Error() {
				c.log.Info("API server's OpenAPI schema unavailable; lists of this group version are compared by the built-in schema or by name",
					"groupVersion", gvk.GroupVersion().String(), "error", err.Error())
			}
			g.err = err
		} else {
			g.err = nil
		}
	}
	var until time.Time
	if now.Before(g.settle) {
		until = g.checked.Add(RetryMissing)
	}
	if g.tc == nil {
		return drift.BuiltinSchema(gvk), g.checked.Add(RetryMissing)
	}
	s := drift.SchemaFrom(g.tc, gvk)
	if s == nil {
		// Not (yet) in the document: a kind its CRD does not serve yet.
		return drift.BuiltinSchema(gvk), g.checked.Add(RetryMissing)
	}
	return s, until
}

// read reads the group version's document when its hash changed. A group
// version the server does not serve leaves no converter.
func (c *Cache) read(g *groupVersion, gv schema.GroupVersion) error {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	paths, err := c.client.PathsWithContext(ctx)
	if err != nil {
		return fmt.Errorf("read the OpenAPI v3 index: %w", err)
	}
	p := "api/" + gv.Version
	if gv.Group != "" {
		p = "apis/" + gv.Group + "/" + gv.Version
	}
	doc, ok := paths[p]
	if !ok {
		g.url, g.tc = "", nil
		return nil
	}
	if url := doc.ServerRelativeURL(); url != "" && url == g.url && g.tc != nil {
		return nil
	}
	raw, err := doc.SchemaWithContext(ctx, "application/json")
	if err != nil {
		return fmt.Errorf("read the OpenAPI v3 of %s: %w", p, err)
	}
	tc, err := converter(raw)
	if err != nil {
		return fmt.Errorf("OpenAPI v3 of %s: %w", p, err)
	}
	g.url, g.tc = doc.ServerRelativeURL(), tc
	return nil
}

// converter builds the type converter server-side apply builds from a group
// version's OpenAPI v3 document.
func converter(raw []byte) (managedfields.TypeConverter, error) {
	var doc spec3.OpenAPI
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if doc.Components == nil {
		return nil, fmt.Errorf("no components")
	}
	models := make(map[string]*spec.Schema, len(doc.Components.Schemas))
	for name, s := range doc.Components.Schemas {
		models[strings.TrimPrefix(name, "#/components/schemas/")] = s
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	return tc, nil
}
