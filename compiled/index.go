package compiled

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// Guard is what the index needs of one Guard.
type Guard struct {
	Name     string
	Snapshot *render.Snapshot
	// Pending: the Guard's snapshot is not known yet (the process just
	// started); the index keeps what it holds for the Guard.
	Pending bool
	// Enforcement is the Guard's spec.enforcement ("" is deny).
	Enforcement string
	// Rules are its ignore rules, the process's included.
	Rules []*drift.Rule
	// Owns reports whether the Guard owns the object of key (of two Guards
	// that claim one object only the first applies it); nil: all.
	Owns func(render.ObjectKey) bool
}

// Index is the compiled form of the desired state: per namespace ("" for
// cluster-scoped objects) the entries of its index ConfigMap.
type Index struct {
	Namespaces map[string]map[string]string
	// Shapes the entries use, sorted by ID.
	Shapes []Shape
	// Fallbacks are the objects left to the webhook, and why.
	Fallbacks []Fallback
	// Resources the entries are of.
	Resources []Resource
}

// Fallback is an object the compiled layer does not decide.
type Fallback struct {
	Guard  string
	Object render.ObjectKey
	// Resource is the object's resource (its group is Object.Group).
	Resource string
	Reason   string
}

// DeferredUsers are the users whose updates some shape leaves to the
// webhook (managedFieldsManagers rules), sorted.
func (ix Index) DeferredUsers() []string {
	var out []string
	for _, s := range ix.Shapes {
		for _, u := range s.Defer {
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Key is an object's key in an index ConfigMap: resource.group_name (a
// ConfigMap key allows letters, digits, "-", "." and "_"; no resource,
// group or name has a "_", so the key is unambiguous).
func Key(group, resource, name string) string { return resource + "." + group + "_" + name }

// guardKeyPrefix starts the key that holds a Guard's revision and
// repository in every namespace it has objects in.
const guardKeyPrefix = "guard."

func guardKey(guard string) string { return guardKeyPrefix + guard }

// BuildIndex compiles the Guards' snapshots. Kinds the mapper does not know
// (a CRD not established yet) are left out until a later build.
func BuildIndex(guards []Guard, mapper meta.RESTMapper) Index {
	return NewBuilder().Build(guards, mapper)
}

// Builder builds indexes, keeping each Guard's part until its snapshot,
// enforcement or ignore rules change: at 100,000 objects a build from
// nothing decodes every object (seconds of CPU), and most syncs change one
// Guard or none.
type Builder struct {
	parts map[string]*guardPart
}

// NewBuilder returns an empty Builder; it is not safe for concurrent use.
func NewBuilder() *Builder { return &Builder{parts: map[string]*guardPart{}} }

// guardPart is one Guard's part of the index.
type guardPart struct {
	key        partKey
	namespaces map[string]map[string]string
	shapes     []Shape
	resources  []Resource
	fallbacks  []Fallback
	complete   bool // every kind was mapped: the part can be kept
	// unowned are the objects of the snapshot another Guard owned when
	// the part was built. A key passes to the next Guard that claims it
	// when its owner lets it go, with no change of this Guard's snapshot:
	// the part is built again when one of them has become this Guard's.
	unowned []render.ObjectKey
}

// stillOwned reports whether the part's objects are still owned as they
// were when it was built.
func (p *guardPart) stillOwned(g Guard) bool {
	for _, k := range p.unowned {
		if g.Owns(k) {
			return false
		}
	}
	return true
}

type partKey struct {
	snapshot    *render.Snapshot
	enforcement string
	rules       *drift.Rule // the first rule: rule lists are compiled once per Guard generation
	nrules      int
}

// Build returns the index of guards.
func (b *Builder) Build(guards []Guard, mapper meta.RESTMapper) Index {
	ix := Index{Namespaces: map[string]map[string]string{}}
	shapes := map[string]Shape{}
	resources := map[Resource]bool{}
	seen := map[string]bool{}
	for _, g := range guards {
		if g.Snapshot == nil {
			continue
		}
		seen[g.Name] = true
		key := partKey{snapshot: g.Snapshot, enforcement: g.Enforcement, nrules: len(g.Rules)}
		if len(g.Rules) > 0 {
			key.rules = g.Rules[0]
		}
		part := b.parts[g.Name]
		if part == nil || part.key != key || !part.complete || !part.stillOwned(g) {
			part = buildPart(g, key, mapper)
			b.parts[g.Name] = part
		}
		for ns, entries := range part.namespaces {
			dst := ix.Namespaces[ns]
			if dst == nil {
				dst = make(map[string]string, len(entries))
				ix.Namespaces[ns] = dst
			}
			maps.Copy(dst, entries)
		}
		for _, s := range part.shapes {
			shapes[s.ID()] = s
		}
		for _, r := range part.resources {
			resources[r] = true
		}
		ix.Fallbacks = append(ix.Fallbacks, part.fallbacks...)
	}
	for name := range b.parts {
		if !seen[name] {
			delete(b.parts, name)
		}
	}
	for _, s := range shapes {
		ix.Shapes = append(ix.Shapes, s)
	}
	slices.SortFunc(ix.Shapes, func(a, b Shape) int { return cmp.Compare(a.ID(), b.ID()) })
	for r := range resources {
		ix.Resources = append(ix.Resources, r)
	}
	sortResources(ix.Resources)
	return ix
}

func buildPart(g Guard, key partKey, mapper meta.RESTMapper) *guardPart {
	part := &guardPart{key: key, namespaces: map[string]map[string]string{}, complete: true}
	shapes := map[string]Shape{}
	resources := map[Resource]bool{}
	git := g.Snapshot.Revision + "|" + escape(redact.URL(g.Snapshot.URL))
	for _, o := range g.Snapshot.Objects {
		if g.Owns != nil && !g.Owns(o.Key) {
			part.unowned = append(part.unowned, o.Key)
			continue
		}
		gvk := o.GVK()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			part.complete = false
			continue
		}
		u := o.Obj()
		namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
		// The stamp policy names the writers of every managed object, the
		// ones no policy decides too (Mode ""): self-heal trusts its
		// annotation only on the resources it matches.
		resources[Resource{Group: m.Resource.Group, Resource: m.Resource.Resource, Namespaced: namespaced}] = true
		mode := decision.Enforcement{Object: u.GetAnnotations()[v1alpha1.EnforcementAnnotation], Guard: g.Enforcement}.AtAdmission()
		if mode != policy.Deny && mode != policy.Warn {
			continue // admitted at admission: nothing to compile
		}
		var s Shape
		if len(g.Rules) > 0 {
			s.Paths, s.Defer = drift.AdmissionIgnores(g.Rules, gvk.Group, gvk.Kind, o.Key.Namespace, o.Key.Name, u.Object)
		}
		if !s.compilable() {
			part.fallbacks = append(part.fallbacks, Fallback{Guard: g.Name, Object: o.Key, Resource: m.Resource.Resource, Reason: "an ignore rule hides a field inside a list element, which CEL cannot compare"})
			continue
		}
		if !packable(o.Key.Name) {
			part.fallbacks = append(part.fallbacks, Fallback{Guard: g.Name, Object: o.Key, Resource: m.Resource.Resource, Reason: "its name has characters the compiled index does not hold (only letters, digits and . - _ : @ +)"})
			continue
		}
		if id := s.ID(); id != "" {
			shapes[id] = s
		}
		ns := ""
		if namespaced {
			ns = o.Key.Namespace
		}
		resources[Resource{Group: m.Resource.Group, Resource: m.Resource.Resource, Namespaced: namespaced, Mode: string(mode)}] = true
		entries := part.namespaces[ns]
		if entries == nil {
			entries = map[string]string{}
			part.namespaces[ns] = entries
		}
		entries[Key(m.Resource.Group, m.Resource.Resource, o.Key.Name)] = string(mode) + "|" + s.ID() + "|" + g.Name + "|" + escape(o.Source.Path) + ":" + strconv.Itoa(o.Source.Line)
		entries[guardKey(g.Name)] = git
	}
	for _, s := range shapes {
		part.shapes = append(part.shapes, s)
	}
	for r := range resources {
		part.resources = append(part.resources, r)
	}
	return part
}

// escaper keeps "|" (the entry's separator), "=" and line ends (the
// bucket's) out of a path or URL: a Git committer names the files, and a
// line end in a path would otherwise start a forged entry for another
// object.
var escaper = strings.NewReplacer("%", "%25", "|", "%7C", "=", "%3D", "\n", "%0A", "\r", "%0D")

func escape(s string) string { return escaper.Replace(s) }

// shapeKeyPrefix starts the keys of the cluster index that record each
// shape in use (JSON), for a process that starts to keep what its last one
// protected, shapes included, until it has read Git again.
const shapeKeyPrefix = "shape."

// recordShapes writes the shapes ix uses into its cluster index.
func (ix *Index) recordShapes() {
	if len(ix.Shapes) == 0 {
		return
	}
	if ix.Namespaces[""] == nil {
		ix.Namespaces[""] = map[string]string{}
	}
	for _, s := range ix.Shapes {
		b, err := json.Marshal(s)
		if err != nil {
			continue // of strings only: cannot fail
		}
		ix.Namespaces[""][shapeKeyPrefix+s.ID()] = string(b)
	}
}

// restoreShape adds to ix the shape id as recorded, when ix lacks it and
// the record is the shape of that id.
func (ix *Index) restoreShape(id string, recorded map[string]string) {
	if id == "" || slices.ContainsFunc(ix.Shapes, func(s Shape) bool { return s.ID() == id }) {
		return
	}
	var s Shape
	if json.Unmarshal([]byte(recorded[shapeKeyPrefix+id]), &s) != nil || s.ID() != id || !s.compilable() {
		return // the entry is compared whole: stricter, never looser
	}
	ix.Shapes = append(ix.Shapes, s)
	slices.SortFunc(ix.Shapes, func(a, b Shape) int { return cmp.Compare(a.ID(), b.ID()) })
}

// entryShape is the shape ID of an object's entry.
func entryShape(value string) string {
	f := strings.Split(value, "|")
	if len(f) != 4 {
		return ""
	}
	return f[1]
}

// entryGuard names the Guard an index entry belongs to.
func entryGuard(key, value string) (string, bool) {
	if strings.HasPrefix(key, shapeKeyPrefix) {
		return "", false
	}
	if g, ok := strings.CutPrefix(key, guardKeyPrefix); ok && !strings.Contains(key, "_") {
		return g, true
	}
	f := strings.Split(value, "|")
	if len(f) != 4 {
		return "", false
	}
	return f[2], true
}

func sortResources(rs []Resource) {
	slices.SortFunc(rs, func(a, b Resource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Mode, b.Mode))
	})
}

// resourceOf reads the resource of an object's entry (Key, and the value
// whose first field is the mode).
func resourceOf(key, value string) (Resource, bool) {
	head, _, ok := strings.Cut(key, "_")
	if !ok {
		return Resource{}, false
	}
	res, group, ok := strings.Cut(head, ".")
	mode, _, _ := strings.Cut(value, "|")
	return Resource{Group: group, Resource: res, Mode: mode}, ok
}
