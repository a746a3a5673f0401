package webhook

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Registrar keeps the webhook configurations' rules equal to the kinds Git
// manages: it registers at start, again whenever Changed is called and the
// resources differ from the last registration, and every Resync (for kinds
// whose CRD was not established at the last try).
type Registrar struct {
	Client client.Client
	Mapper meta.RESTMapper
	// Kinds returns the kinds the snapshots hold (gitstore.Store.Kinds).
	Kinds  func() []schema.GroupVersionKind
	Resync time.Duration
	Log    logr.Logger

	kick         chan struct{}
	mu           sync.Mutex // serializes Sync
	registration Registration
	last         []Resource
}

// Changed asks for a new registration; it never blocks.
func (r *Registrar) Changed() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Init prepares Changed; call it before wiring Changed to a Store.
func (r *Registrar) Init() { r.kick = make(chan struct{}, 1) }

// Run registers reg (with the managed resources as rules) and keeps it
// registered until ctx ends. The first registration's error is returned;
// later ones are logged and retried.
func (r *Registrar) Run(ctx context.Context, reg Registration) error {
	r.mu.Lock()
	r.registration = reg
	r.mu.Unlock()
	if err := r.Sync(ctx); err != nil {
		return err
	}
	resync := r.Resync
	if resync <= 0 {
		resync = 30 * time.Second
	}
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.kick:
		case <-tick.C:
		}
		if err := r.Sync(ctx); err != nil {
			r.Log.Error(err, "webhook registration failed; retrying")
		}
	}
}

// Sync registers the configurations when the managed resources changed
// since the last successful registration (always, the first time).
func (r *Registrar) Sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.registration.Name == "" {
		return nil // not started: Run registers everything first
	}
	res := r.resources()
	if r.last != nil && slices.Equal(res, r.last) {
		return nil
	}
	reg := r.registration
	reg.Resources = res
	if err := Register(ctx, r.Client, reg); err != nil {
		return err
	}
	r.Log.Info("webhook rules registered", "resources", len(res))
	r.last = res
	if r.last == nil {
		r.last = []Resource{}
	}
	return nil
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
