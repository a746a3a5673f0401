package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/uninstall"
)

// Registrar keeps the webhook configurations equal to what the guard wants:
// rules for the kinds Git manages, the CA it serves, and the rest of its
// Registration. It registers at start; again whenever Changed is called (new
// kinds, a new CA) and the registration differs from the last one written;
// at once when someone deletes or changes either configuration (a watch on
// the two objects by name, when Kube is set and Protect is on); and every
// Resync (for kinds whose CRD was not established at the last try).
// Make it with NewRegistrar.
type Registrar struct {
	RegistrarOptions

	kick         chan struct{}
	mu           sync.Mutex // serializes Sync
	registration Registration
	last         *Registration                // last registration written or found in place
	want         atomic.Pointer[Registration] // the same, for the watch handlers
	forced       atomic.Bool                  // read the live objects at the next Sync
	deleted      atomic.Bool                  // a configuration was deleted since the last Sync
	leftDeleted  atomic.Bool                  // the last Sync found one missing during an uninstall and left it so
}

// RegistrarOptions configure a Registrar. Client, Mapper and Kinds are
// required; Audit too when Protect is on.
type RegistrarOptions struct {
	// Client reads straight from the API server (not a cache) and writes.
	Client client.Client
	Mapper meta.RESTMapper
	// Kinds returns the kinds the snapshots hold (render.Store.Kinds).
	Kinds func() []schema.GroupVersionKind
	// Leftover, when set, returns what the compiled admission policies
	// leave to the webhooks (Registration.Leftover); nil: they decide all.
	Leftover func() *Leftover
	// CA, when set, returns the CA bundle to register (it changes when the
	// serving certificate's CA rotates); otherwise Registration.CABundle.
	CA func() []byte
	// Kube watches the two configurations; nil: no watch, no restore.
	Kube kubernetes.Interface
	// Protect restores a configuration someone deleted or changed at once,
	// and records who did it in Audit.
	Protect bool
	Audit   *audit.Logger
	// Uninstalling, when set, is asked before a deleted configuration is
	// restored: true (the guard's own Deployment is gone: helm uninstall)
	// leaves it deleted. It is asked UninstallGrace after the deletion.
	Uninstalling   func(ctx context.Context) bool
	UninstallGrace time.Duration
	Resync         time.Duration
	Log            logr.Logger
}

// NewRegistrar returns a Registrar ready to be told of changes (Changed)
// before it runs, or an error naming the required option that is missing.
func NewRegistrar(o RegistrarOptions) (*Registrar, error) {
	switch {
	case o.Client == nil:
		return nil, errors.New("webhook registrar: no Client")
	case o.Mapper == nil:
		return nil, errors.New("webhook registrar: no Mapper")
	case o.Kinds == nil:
		return nil, errors.New("webhook registrar: no Kinds")
	case o.Protect && o.Audit == nil:
		return nil, errors.New("webhook registrar: Protect without an Audit logger")
	}
	return &Registrar{RegistrarOptions: o, kick: make(chan struct{}, 1)}, nil
}

// Changed asks for a new registration; it never blocks.
func (r *Registrar) Changed() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run registers reg (with the managed resources as rules) and keeps it
// registered until ctx ends. The first registration's error is returned;
// later ones are logged and retried.
func (r *Registrar) Run(ctx context.Context, reg Registration) error {
	r.mu.Lock()
	r.registration = reg
	r.mu.Unlock()
	r.forced.Store(true)
	if err := r.Sync(ctx); err != nil {
		return err
	}
	if r.Kube != nil && r.Protect {
		if err := r.watch(ctx); err != nil {
			return err
		}
	}
	resync := r.Resync
	if resync <= 0 {
		resync = 30 * time.Second
	}
	tick := time.NewTicker(resync)
	defer tick.Stop()
	uninstallLogged := false
	sayLeftDeleted := func() {
		if !uninstallLogged {
			r.Log.Info("webhook configuration deleted while the guard's Deployment is gone (uninstall): not restored")
			uninstallLogged = true
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
		case <-tick.C:
		}
		if r.deleted.Load() && uninstall.After(ctx, r.UninstallGrace, r.Uninstalling) {
			// Asked again at every later tick, so a mistaken "gone" only delays.
			sayLeftDeleted()
			continue
		}
		if err := r.Sync(ctx); err == nil {
			if r.leftDeleted.Load() {
				sayLeftDeleted()
				continue
			}
			r.deleted.Store(false)
		} else {
			r.Log.Error(err, "webhook registration failed; retrying")
			r.forced.Store(true)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
				r.Changed()
			}
		}
	}
}

// Sync registers the configurations when the wanted registration changed
// since the last one written, or when the live objects must be checked
// (at start, after someone changed them). The live objects are read and
// written only when they differ.
func (r *Registrar) Sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.registration.Name == "" {
		return nil // not started: Run registers everything first
	}
	reg := r.registration
	reg.Resources = r.resources()
	if reg.Resources == nil {
		reg.Resources = []Resource{}
	}
	if r.CA != nil {
		reg.CABundle = r.CA()
	}
	if r.Leftover != nil {
		reg.Leftover = r.Leftover()
	}
	forced := r.forced.Swap(false)
	if !forced && r.last != nil && sameRegistration(*r.last, reg) {
		return nil
	}
	// A write the guard's own wish does not explain (the same registration
	// as last time) restores what someone else deleted or changed.
	restoring := r.last != nil && sameRegistration(*r.last, reg)
	// A configuration found missing is an uninstall's while the guard's
	// Deployment is gone, whatever woke this Sync (the watch's delete event
	// may come after it): then it is left deleted and the Run loop says so.
	var mayCreate func() bool
	if r.last != nil && r.Uninstalling != nil {
		mayCreate = func() bool { return !r.Uninstalling(ctx) }
	}
	written, err := register(ctx, r.Client, reg, mayCreate)
	for _, w := range written {
		if restoring {
			r.restored(ctx, w)
		}
	}
	uninstalled := errors.Is(err, errNotRecreated)
	r.leftDeleted.Store(uninstalled)
	if uninstalled {
		r.deleted.Store(true)
		r.forced.Store(true)
		return nil
	}
	if err != nil {
		r.forced.Store(true)
		return err
	}
	if len(written) > 0 && !restoring {
		r.Log.Info("webhook configurations registered", "configuration", reg.Name, "resources", len(reg.Resources))
	}
	r.last = &reg
	r.want.Store(&reg)
	return nil
}

func sameRegistration(a, b Registration) bool {
	return slices.Equal(a.Resources, b.Resources) && bytes.Equal(a.CABundle, b.CABundle) && reflect.DeepEqual(a.Leftover, b.Leftover)
}

// resources maps the managed kinds to resources, sorted; kinds the API
// server does not serve (yet) are left out until a later Sync.
func (r *Registrar) resources() []Resource {
	var out []Resource
	for _, gvk := range r.Kinds() {
		m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			r.Log.V(1).Info("kind not served yet; its webhook rule waits", "kind", gvk.String(), "error", err.Error())
			continue
		}
		res := Resource{Group: m.Resource.Group, Resource: m.Resource.Resource}
		if !slices.Contains(out, res) {
			out = append(out, res)
		}
	}
	slices.SortFunc(out, func(a, b Resource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource))
	})
	return out
}
