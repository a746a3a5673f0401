package drift

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftguard/driftguard/jsonvalue"
)

// ControlPlaneManagers are the field managers of the control plane's own
// writes to objects (a Deployment's revision annotation, replicas the
// autoscaler sets where Git sets none). What they own is not an addition,
// unless a verified person wrote the object's newest change under one of
// them (Options.Borrowed): a name is the writer's claim.
var ControlPlaneManagers = []string{"kube-controller-manager", "kube-scheduler", "kubelet", "kube-apiserver"}

// Additions returns what someone added to live that Git does not set: every
// field or list element that a field manager other than the guard's (guard)
// and ControlPlaneManagers owns in live's managedFields and the desired
// object lacks (a sidecar container, hostNetwork, a hostPath volume, an
// owner reference, a finalizer). Fields the control plane sets without an
// owner (defaults) are never additions, nor are status, server-owned
// metadata, last-applied-configuration, the guard's stamp, writes through a
// subresource, the fields of managers an ignore rule names and the fields
// ignore rules hide. Each change has Added set, Live the value, and a path in
// live's index space, deepest first within a list so that removing them in
// order keeps the later paths valid.
func Additions(desired, live map[string]any, guard string, opts Options) []Change {
	md, _ := live["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	if len(entries) == 0 {
		return nil
	}
	a := adder{comparer: comparer{opts: opts, tokens: make([]string, 0, 16)}, seen: map[string]bool{}}
	a.secret = isSecret(live)
	var managers []string
	top := schemaFor(live, opts).top()
	if opts.rules != nil {
		a.hide = opts.rules.prepare(desired, a.secret)
		managers = opts.rules.managers
	}
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		manager, _ := entry["manager"].(string)
		reserved := manager == guard || slices.Contains(ControlPlaneManagers, manager)
		if sub, _ := entry["subresource"].(string); sub != "" || slices.Contains(managers, manager) ||
			reserved && !borrowed(entry, opts.Borrowed, opts.BorrowedSince) {
			continue
		}
		fields := entry["fieldsV1"]
		if s, ok := fields.(string); ok {
			v, err := decodeJSON(s)
			if err != nil {
				continue
			}
			fields = v
		}
		if f, ok := fields.(map[string]any); ok {
			a.walk(f, live, desired, top)
		}
	}
	slices.SortFunc(a.changes, func(x, y Change) int { return -comparePaths(x.Path, y.Path) })
	return a.changes
}

// BorrowedSlack allows for the entry's time (the API server's clock,
// before admission, whole seconds) and the stamp's (the webhook's, after
// it) falling on either side of a second, or of two clocks.
const BorrowedSlack = 2 * time.Second

// borrowed reports whether a managed-fields entry is of manager and was
// written at or after since.
func borrowed(entry map[string]any, manager string, since time.Time) bool {
	return manager != "" && entry["manager"] == manager && WrittenSince(entry, since)
}

// WrittenSince reports whether a managed-fields entry (as unstructured
// holds it) was written at or after since, within BorrowedSlack; false
// for a zero since.
func WrittenSince(entry map[string]any, since time.Time) bool {
	if since.IsZero() {
		return false
	}
	stamp, _ := entry["time"].(string)
	t, err := time.Parse(time.RFC3339, stamp)
	return err == nil && !t.Before(since.Add(-BorrowedSlack))
}

// adder walks a manager's field set through live and desired; comparer.tokens
// is the path in desired's index space (for ignore rules), path in live's.
type adder struct {
	comparer
	path []string
	seen map[string]bool
}

func (a *adder) walk(fields map[string]any, live, desired any, t typ) {
	for k, child := range fields {
		prefix, rest, ok := strings.Cut(k, ":")
		if !ok {
			continue // "." is the node itself
		}
		sub, _ := child.(map[string]any)
		switch prefix {
		case "f":
			lm, _ := live.(map[string]any)
			lv, ok := lm[rest]
			if !ok || lv == nil || a.skipped(rest) {
				continue
			}
			dm, _ := desired.(map[string]any)
			dv, inGit := dm[rest]
			a.step(rest, rest, lv, dv, inGit && dv != nil, false, sub, t.field(rest))
		case "k", "v":
			ll, _ := live.([]any)
			key, err := decodeJSON(rest)
			if err != nil {
				continue
			}
			et := t.elem()
			i := indexOf(ll, key, prefix == "k", et)
			if i < 0 {
				continue
			}
			dl, _ := desired.([]any)
			j := indexOf(dl, key, prefix == "k", et)
			var dv any
			token := "-"
			if j >= 0 {
				dv, token = dl[j], strconv.Itoa(j)
				if km, ok := key.(map[string]any); ok {
					// The key fields are Git's element's identity,
					// even those Git leaves to their defaults.
					sub = withoutFields(sub, km)
				}
			}
			a.step(strconv.Itoa(i), token, ll[i], dv, j >= 0, true, sub, et)
		case "i":
			ll, _ := live.([]any)
			i, err := strconv.Atoi(rest)
			if err != nil || i < 0 || i >= len(ll) {
				continue
			}
			dl, _ := desired.([]any)
			var dv any
			if i < len(dl) {
				dv = dl[i]
			}
			a.step(rest, rest, ll[i], dv, i < len(dl), true, sub, t.elem())
		}
	}
}

// step goes into one owned field or element: an addition when Git lacks it,
// else deeper into what the manager owns below it. Where Git lacks a map
// field of which the manager owns only some keys or elements (annotations,
// owner references), those are the additions, not the field: what others own
// beside them stays.
func (a *adder) step(pathToken, desiredToken string, live, desired any, inGit, element bool, fields map[string]any, t typ) {
	a.path = append(a.path, pathToken)
	a.tokens = append(a.tokens, desiredToken)
	defer func() {
		a.path = a.path[:len(a.path)-1]
		a.tokens = a.tokens[:len(a.tokens)-1]
	}()
	if a.ignored() {
		return
	}
	if !inGit && !element && ownsParts(fields) {
		a.walk(fields, live, nil, t)
		return
	}
	if !inGit {
		p := pointer(a.path)
		if !a.seen[p] {
			a.seen[p] = true
			if a.secret && len(a.path) >= 1 && (a.path[0] == "data" || a.path[0] == "stringData") {
				live = RedactMap(live)
			}
			a.changes = append(a.changes, Change{Path: p, Live: live, Added: true})
		}
		return
	}
	if len(fields) > 0 {
		a.walk(fields, live, desired, t)
	}
}

// withoutFields returns fields without the "f:" entries of the keys of km.
func withoutFields(fields, km map[string]any) map[string]any {
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		if name, ok := strings.CutPrefix(k, "f:"); ok {
			if _, key := km[name]; key {
				continue
			}
		}
		out[k] = v
	}
	return out
}

// ownsParts reports whether a field set names fields or elements below its
// node, rather than the node whole.
func ownsParts(fields map[string]any) bool {
	for k := range fields {
		if k != "." {
			return true
		}
	}
	return false
}

// skipped reports fields at the current depth that are never additions.
func (a *adder) skipped(field string) bool {
	switch len(a.path) {
	case 0:
		return field == "status" || field == "apiVersion" || field == "kind"
	case 1:
		return a.path[0] == "metadata" && serverOwnedMetadata[field]
	case 2:
		return a.path[0] == "metadata" && a.path[1] == "annotations" && (hasOwnPrefix(field) || ignoredAnnotations[field])
	}
	return false
}

// indexOf finds the list element a managedFields key names: for "k:" an
// object whose fields equal the key's (a key field the element lacks taking
// its schema default, as the API server keys it), for "v:" an equal value.
func indexOf(list []any, key any, keyed bool, et typ) int {
	for i, el := range list {
		if keyed {
			km, _ := key.(map[string]any)
			em, ok := el.(map[string]any)
			if !ok || len(km) == 0 {
				continue
			}
			match := true
			for f, kv := range km {
				if ev, ok := keyField(em, f, et); !ok || !sameScalar(kv, ev) {
					match = false
					break
				}
			}
			if match {
				return i
			}
		} else if jsonvalue.Equal(el, key) {
			return i
		}
	}
	return -1
}

// comparePaths orders JSON pointers token by token, list indices by number.
func comparePaths(a, b string) int {
	at, bt := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(at) && i < len(bt); i++ {
		if at[i] == bt[i] {
			continue
		}
		ai, aerr := strconv.Atoi(at[i])
		bi, berr := strconv.Atoi(bt[i])
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(at[i], bt[i])
	}
	return len(at) - len(bt)
}
