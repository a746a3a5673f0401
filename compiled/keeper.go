package compiled

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager writes the generated objects.
const FieldManager = "driftguard-compiled"

// hashAnnotation holds the digest of what the guard last wrote.
const hashAnnotation = "driftguard.io/compiled-digest"

// Keeper keeps the compiled policies, their bindings and the index equal to
// what the Guards' snapshots and settings want: at start, when Changed is
// called (a new snapshot, a Guard changed or deleted), and every Resync,
// when it also restores what someone else changed or deleted. Run it on the
// leader only: one writer.
type Keeper struct {
	KeeperOptions

	kick    chan struct{}
	mu      sync.Mutex
	written map[string]writtenObject // by kind/namespace/name
	builder *Builder
	// confirmed is the canary token the API server was last seen to read.
	confirmed string
}

// KeeperOptions are what a Keeper works with.
type KeeperOptions struct {
	// Client writes; Reader lists straight from the API server.
	Client client.Client
	Reader client.Reader
	Mapper meta.RESTMapper
	// Config is the fixed part of the policies (Resources and Shapes come
	// from the index).
	Config Config
	// Guards lists what the index is built from.
	Guards func() ([]Guard, error)
	// Owner, when set, names the cluster-scoped object every generated
	// object is owned by (the guard's webhook configuration, which helm
	// uninstall deletes), so that the garbage collector removes them.
	Owner func(ctx context.Context) (*metav1.OwnerReference, error)
	// Resync is the period of a full check (default 10s).
	Resync time.Duration
	// Synced, when set, is called after each successful sync.
	Synced func(Index)
	// Removing, when set, is called before Remove deletes anything (the
	// webhooks take back what the policies decided); Removed after.
	Removing, Removed func()
	Log               logr.Logger
}

// writtenObject is what the guard last wrote of an object: the digest of
// what it wanted and the resourceVersion its write left. Any other write
// (of a ConfigMap's data too, which has no generation) changes the
// resourceVersion, and the next full check writes the object again.
type writtenObject struct {
	digest          string
	resourceVersion string
	// uid and generation are the object's after the write; a ConfigMap
	// has no generation (0). A write of a policy's status (the controller
	// manager's type checking) changes its resourceVersion, not its
	// generation; an object deleted and made again has another uid.
	uid        types.UID
	generation int64
}

// NewKeeper returns a Keeper ready to Run.
func NewKeeper(o KeeperOptions) *Keeper {
	if o.Resync <= 0 {
		o.Resync = 10 * time.Second
	}
	return &Keeper{KeeperOptions: o, kick: make(chan struct{}, 1), written: map[string]writtenObject{}, builder: NewBuilder()}
}

// Changed asks for a sync; it never blocks.
func (k *Keeper) Changed() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// Run keeps the objects in force while enabled says so, and removed while
// it does not, until ctx ends.
func (k *Keeper) Run(ctx context.Context, enabled func() bool) error {
	tick := time.NewTicker(k.Resync)
	defer tick.Stop()
	full := true
	removed := false // removed since last enabled: nothing to do, no API call
	for {
		var err error
		switch on := enabled(); {
		case on:
			removed = false
			err = k.Sync(ctx, full)
			if err != nil && k.Removed != nil {
				k.Removed() // in force or not: not known
			}
		case !removed:
			err = k.Remove(ctx)
			// A guard without the rights of mode both (the chart's RBAC
			// grants them with it) has none of these objects to remove.
			if err == nil || apierrors.IsForbidden(err) {
				removed, err = true, nil
			}
		}
		if err != nil && ctx.Err() == nil {
			k.Log.Error(err, "compiled admission policies not in force; retrying")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
			full = true
			continue
		}
		full = false
		select {
		case <-ctx.Done():
			return nil
		case <-k.kick:
		case <-tick.C:
			full = true
		}
	}
}

// Sync writes what differs from the last write. full also reads the live
// objects, to restore and remove what someone else changed or left.
func (k *Keeper) Sync(ctx context.Context, full bool) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	guards, err := k.Guards()
	if err != nil {
		return err
	}
	ix := k.builder.Build(guards, k.Mapper)
	if err := k.keepPending(ctx, guards, &ix); err != nil {
		return err
	}
	ix.recordShapes()
	order, digests, err := k.wanted(ctx, &ix)
	if err != nil {
		return err
	}
	var live map[string]*metav1.PartialObjectMetadata
	if full {
		if live, err = k.live(ctx); err != nil {
			return err
		}
	}
	if err := k.writeChanged(ctx, order, digests, live); err != nil {
		return err
	}
	if token := order[len(order)-1].(*corev1.ConfigMap).Data[canaryKey]; token != k.confirmed {
		if err := k.confirmCanary(ctx, token); err != nil {
			return err
		}
		k.confirmed = token
	}
	// Remove what is no longer wanted: bindings before policies, so that
	// nothing is bound to a missing policy, and the index last.
	if live == nil {
		if live, err = k.live(ctx); err != nil {
			return err
		}
	}
	want := map[string]client.Object{}
	for _, o := range order {
		want[objectID(o)] = o
	}
	if err := k.deleteAll(ctx, live, want); err != nil {
		return err
	}
	if k.Synced != nil {
		k.Synced(ix)
	}
	return nil
}

// wanted is every object ix asks for, in the order they are written:
// policies before bindings before the index, each owned by Owner's answer
// when Owner is set, and the digest of each.
func (k *Keeper) wanted(ctx context.Context, ix *Index) ([]client.Object, []string, error) {
	cfg := k.Config
	cfg.Resources, cfg.Shapes = ix.Resources, ix.Shapes
	var owner *metav1.OwnerReference
	if k.Owner != nil {
		var err error
		if owner, err = k.Owner(ctx); err != nil {
			return nil, nil, err
		}
	}
	policies, bindings := cfg.Policies()
	var order []client.Object
	for _, p := range policies {
		order = append(order, p)
	}
	for _, b := range bindings {
		order = append(order, b)
	}
	if len(cfg.Resources) > 0 {
		mp, mb := cfg.StampPolicy()
		order = append(order, mp, mb)
	}
	for _, ns := range slices.Sorted(maps.Keys(ix.Namespaces)) {
		if ns != "" && slices.Contains(cfg.ExcludeNamespaces, ns) {
			continue
		}
		order = append(order, cfg.indexConfigMap(ns, ix.Namespaces[ns]))
	}
	if _, ok := ix.Namespaces[""]; !ok {
		order = append(order, cfg.indexConfigMap("", nil)) // the cluster binding's parameter always exists
	}
	digests := make([]string, 0, len(order)+1)
	add := func(o client.Object) error {
		if owner != nil {
			o.SetOwnerReferences([]metav1.OwnerReference{*owner})
		}
		d, err := digestOf(o)
		digests = append(digests, d)
		return err
	}
	for _, o := range order {
		if err := add(o); err != nil {
			return nil, nil, err
		}
	}
	canary := cfg.canaryConfigMap(order, digests)
	if err := add(canary); err != nil {
		return nil, nil, err
	}
	return append(order, canary), digests, nil // the canary last: once the API server reads it, it reads every index before it
}

// writeChanged writes, in order, each object whose digest differs from the
// last one written, or (live read) whose live copy differs from what was
// written: someone changed or deleted it, and it is restored. A policy or
// binding of the uid and generation written was not changed, whatever
// its resourceVersion: the controller manager writes a policy's status
// (its type checking), which is no one's change to restore (until
// 2026-12-06 each policy was written again and logged as restored).
func (k *Keeper) writeChanged(ctx context.Context, order []client.Object, digests []string, live map[string]*metav1.PartialObjectMetadata) error {
	var errs []error
	for i, o := range order {
		id, digest := objectID(o), digests[i]
		last, seen := k.written[id]
		if seen && last.digest == digest {
			if live == nil {
				continue
			}
			if l, ok := live[id]; ok && l.Annotations[hashAnnotation] == digest &&
				(l.ResourceVersion == last.resourceVersion || (last.generation > 0 && l.UID == last.uid && l.Generation == last.generation)) {
				continue
			}
		}
		setAnnotation(o, hashAnnotation, digest)
		w, err := k.apply(ctx, o)
		if err != nil {
			errs = append(errs, err)
			delete(k.written, id)
			continue
		}
		if seen && last.digest == digest {
			k.Log.Info("restored a compiled admission object someone changed or deleted", "object", id)
		}
		w.digest = digest
		k.written[id] = w
	}
	return errors.Join(errs...)
}

// Remove deletes every generated object (mode webhook).
func (k *Keeper) Remove(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	live, err := k.live(ctx)
	if err != nil {
		return err
	}
	if len(live) > 0 && k.Removing != nil {
		k.Removing()
	}
	// The canary stays: were its binding removed with the others, the API
	// server would stop reading ConfigMap parameters until it restarts.
	keep := map[string]client.Object{}
	for id, o := range live {
		if k.Config.isCanary(o) {
			keep[id] = o
		}
	}
	if err := k.deleteAll(ctx, live, keep); err != nil {
		return err
	}
	if k.Removed != nil {
		k.Removed()
	}
	return nil
}

var (
	policyGVK  = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	bindingGVK = admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
	cmGVK      = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	mapGVK     = admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy")
	mapbGVK    = admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding")
)

// live lists the generated objects by their labels.
func (k *Keeper) live(ctx context.Context) (map[string]*metav1.PartialObjectMetadata, error) {
	out := map[string]*metav1.PartialObjectMetadata{}
	for _, l := range []struct {
		gvk schema.GroupVersionKind
		sel client.MatchingLabels
	}{
		{policyGVK, client.MatchingLabels{CompiledLabel: k.Config.Name}},
		{mapGVK, client.MatchingLabels{CompiledLabel: k.Config.Name}},
		{mapbGVK, client.MatchingLabels{CompiledLabel: k.Config.Name}},
		{bindingGVK, client.MatchingLabels{CompiledLabel: k.Config.Name}},
		{cmGVK, client.MatchingLabels{IndexLabel: k.Config.Name}},
	} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(l.gvk.GroupVersion().WithKind(l.gvk.Kind + "List"))
		if err := k.Reader.List(ctx, list, l.sel); err != nil {
			return nil, fmt.Errorf("list %s: %w", l.gvk.Kind, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			if _, ok := k.Config.indexOf(o.Namespace, o.Name); l.gvk == cmGVK && !ok && !k.Config.isCanary(o) {
				continue // a label anyone may set: not the guard's to delete
			}
			o.SetGroupVersionKind(l.gvk)
			out[objectID(o)] = o
		}
	}
	return out, nil
}

// apply writes o with server-side apply and returns the resourceVersion,
// uid and generation it left (the digest is the caller's to fill).
func (k *Keeper) apply(ctx context.Context, o client.Object) (writtenObject, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return writtenObject{}, fmt.Errorf("convert %s: %w", objectID(o), err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	u.SetGroupVersionKind(gvkOf(o))
	if err := k.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		if apierrors.IsNotFound(err) && o.GetNamespace() != "" && o.GetNamespace() != k.Config.Namespace {
			return writtenObject{}, nil // the namespace went away: nothing left to protect there
		}
		return writtenObject{}, fmt.Errorf("apply %s: %w", objectID(o), err)
	}
	if cm, ok := o.(*corev1.ConfigMap); ok {
		rv, err := k.dropForeignEntries(ctx, cm, u)
		return writtenObject{resourceVersion: rv}, err
	}
	return writtenObject{resourceVersion: u.GetResourceVersion(), uid: u.GetUID(), generation: u.GetGeneration()}, nil
}

// dropForeignEntries removes from an index ConfigMap the entries the guard
// did not write (a server-side apply keeps the keys another manager owns:
// a ConfigMap of the index's name made before the guard's policies were in
// force), so that the policies read only what the guard wrote. It returns
// the resourceVersion the ConfigMap is left at.
func (k *Keeper) dropForeignEntries(ctx context.Context, want *corev1.ConfigMap, applied *unstructured.Unstructured) (string, error) {
	data, _, err := unstructured.NestedStringMap(applied.Object, "data")
	if err != nil {
		return "", fmt.Errorf("read %s: %w", objectID(want), err)
	}
	if len(data) == len(want.Data) {
		return applied.GetResourceVersion(), nil // every wanted key is there: nothing else is
	}
	cm := want.DeepCopy()
	cm.ResourceVersion = applied.GetResourceVersion()
	if err := k.Client.Update(ctx, cm, client.FieldOwner(FieldManager)); err != nil {
		return "", fmt.Errorf("replace %s, which held entries the guard did not write: %w", objectID(want), err)
	}
	k.Log.Info("removed entries the guard did not write from a compiled admission index", "object", objectID(want), "entries", len(data)-len(want.Data))
	return cm.ResourceVersion, nil
}

func (c Config) indexConfigMap(ns string, entries map[string]string) *corev1.ConfigMap {
	name := c.IndexName()
	if ns == "" {
		ns, name = c.Namespace, c.ClusterIndexName()
	}
	l := c.labels()
	l[IndexLabel] = c.Name
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l}, Data: PackEntries(entries)}
}

func gvkOf(o client.Object) schema.GroupVersionKind {
	switch o.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return policyGVK
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return bindingGVK
	case *corev1.ConfigMap:
		return cmGVK
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		return mapGVK
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		return mapbGVK
	}
	return o.GetObjectKind().GroupVersionKind()
}

func objectID(o client.Object) string {
	return gvkOf(o).Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// deleteAll deletes the live objects keep does not hold, bindings before
// policies and the index last (so nothing is bound to a missing policy, and
// no policy reads a missing index), and forgets them.
func (k *Keeper) deleteAll(ctx context.Context, live map[string]*metav1.PartialObjectMetadata, keep map[string]client.Object) error {
	rank := func(id string) int {
		kind, _, _ := strings.Cut(id, "/")
		switch {
		case strings.HasSuffix(kind, "Binding"):
			return 0
		case kind == cmGVK.Kind:
			return 2
		}
		return 1
	}
	ids := slices.SortedFunc(maps.Keys(live), func(a, b string) int { return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b)) })
	var errs []error
	for _, id := range ids {
		if _, ok := keep[id]; ok {
			continue
		}
		if err := client.IgnoreNotFound(k.Client.Delete(ctx, live[id])); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", id, err))
			continue
		}
		delete(k.written, id)
	}
	return errors.Join(errs...)
}

func setAnnotation(o client.Object, k, v string) {
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	o.SetAnnotations(a)
}

func digestOf(o client.Object) (string, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", objectID(o), err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:12]), nil
}

// indexOf reports whether the ConfigMap namespace/name is an index, and
// of which namespace ("" for cluster-scoped objects).
func (c Config) indexOf(namespace, name string) (string, bool) {
	switch {
	case name == c.ClusterIndexName() && namespace == c.Namespace:
		return "", true
	case name == c.IndexName():
		return namespace, true
	}
	return "", false
}

// keepPending copies into ix what the live index holds for pending Guards,
// so that a process that starts does not open what its last one protected
// while it reads Git again.
func (k *Keeper) keepPending(ctx context.Context, guards []Guard, ix *Index) error {
	pending := map[string]bool{}
	for _, g := range guards {
		if g.Pending {
			pending[g.Name] = true
		}
	}
	if len(pending) == 0 {
		return nil
	}
	var list corev1.ConfigMapList
	if err := k.Reader.List(ctx, &list, client.MatchingLabels{IndexLabel: k.Config.Name}); err != nil {
		return fmt.Errorf("list the index: %w", err)
	}
	// The shapes the kept entries use, as the last process recorded them:
	// without them the policies would compare those objects whole.
	var recorded map[string]string
	for _, cm := range list.Items {
		if ns, ok := k.Config.indexOf(cm.Namespace, cm.Name); ok && ns == "" {
			recorded = Entries(cm.Data)
		}
	}
	for _, cm := range list.Items {
		ns, ok := k.Config.indexOf(cm.Namespace, cm.Name)
		if !ok {
			continue
		}
		for key, v := range Entries(cm.Data) {
			guard, ok := entryGuard(key, v)
			if !ok || !pending[guard] {
				continue
			}
			if ix.Namespaces[ns] == nil {
				ix.Namespaces[ns] = map[string]string{}
			}
			ix.Namespaces[ns][key] = v
			ix.restoreShape(entryShape(v), recorded)
			if r, ok := resourceOf(key, v); ok {
				r.Namespaced = ns != ""
				stamped := r
				stamped.Mode = ""
				for _, r := range []Resource{r, stamped} {
					if !slices.Contains(ix.Resources, r) {
						ix.Resources = append(ix.Resources, r)
					}
				}
			}
		}
	}
	sortResources(ix.Resources)
	return nil
}
