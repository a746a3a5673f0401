package selfheal

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// SyncState returns the sync state of a managed object as the watcher
// last compared it: OutOfSync with the paths that differ (nil when the
// object is missing), Unknown with why it cannot be compared (its kind is
// not watched, or its live state not read yet), or InSync. It implements
// reconcile.SyncStates.
func (w *Watcher) SyncState(gvk schema.GroupVersionKind, namespace, name string) (state v1alpha1.SyncState, paths []string, reason string) {
	w.mu.Lock()
	ki, watched := w.informers[gvk]
	st := w.state
	w.mu.Unlock()
	switch {
	case !watched:
		return v1alpha1.Unknown, nil, fmt.Sprintf("kind %s is not watched: the API server does not serve it (yet), or the guard may not list it", gvkString(gvk))
	case !ki.informer.HasSynced():
		return v1alpha1.Unknown, nil, fmt.Sprintf("the live %s objects have not been read yet", gvk.Kind)
	}
	it := item{gvk: gvk, namespace: namespace, name: name}
	if st != nil {
		if p, drifted := st.pathsOf(it); drifted {
			return v1alpha1.OutOfSync, p, ""
		}
	}
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	// Whether it is there, without expanding a compacted object.
	if _, exists, err := ki.informer.GetIndexer().GetByKey(key); err == nil && !exists {
		return v1alpha1.OutOfSync, nil, "" // missing; the queue has it
	}
	return v1alpha1.InSync, nil, ""
}

func gvkString(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Version + "/" + gvk.Kind
	}
	return gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
}

// notifySynced tells the guards whose objects of kind gvk the informer
// holds, once it has read them all: their objects turned from Unknown to
// compared, which no drift reports when they are in sync.
func (w *Watcher) notifySynced(ctx context.Context, gvk schema.GroupVersionKind, inf cache.SharedIndexInformer) {
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	guards := map[string]bool{}
	for _, key := range inf.GetStore().ListKeys() {
		ns, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			continue
		}
		if guard, _, ok := w.Store.Lookup(item{gvk: gvk, namespace: ns, name: name}.key()); ok {
			guards[guard] = true
		}
	}
	for guard := range guards {
		w.notify(guard)
	}
}
