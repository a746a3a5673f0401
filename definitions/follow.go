package definitions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// crdResource is the resource of CustomResourceDefinitions.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Forgetter forgets what it read of the kinds of a group
// (*schemas.Cache).
type Forgetter interface {
	Forget(group string)
}

// Follower watches CustomResourceDefinitions (their metadata only: the
// group is in the name, a change of spec in the generation) and, when one
// is added, changed or deleted after the first list, makes Schemas forget
// the group and resets Mapper (when it is a meta.ResettableRESTMapper). A
// manager.Runnable that runs on every replica.
type Follower struct {
	Config  *rest.Config
	Schemas Forgetter
	Mapper  meta.RESTMapper
	// Changed, when set, is told the group of each change after the
	// caches forgot it.
	Changed func(group string)
	Log     logr.Logger
}

// NeedLeaderElection is false: every replica compares and maps kinds.
func (f *Follower) NeedLeaderElection() bool { return false }

// Start watches until ctx ends.
func (f *Follower) Start(ctx context.Context) error {
	mc, err := metadata.NewForConfig(f.Config)
	if err != nil {
		return fmt.Errorf("follow CustomResourceDefinitions: metadata client: %w", err)
	}
	inf := metadatainformer.NewFilteredMetadataInformer(mc, crdResource, metav1.NamespaceAll, 10*time.Minute, cache.Indexers{}, nil).Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				f.changed(obj, "added")
			}
		},
		UpdateFunc: func(old, cur any) {
			o, ook := old.(metav1.Object)
			c, cok := cur.(metav1.Object)
			if ook && cok && o.GetGeneration() != c.GetGeneration() {
				f.changed(cur, "changed")
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			f.changed(obj, "deleted")
		},
	}); err != nil {
		return fmt.Errorf("follow CustomResourceDefinitions: %w", err)
	}
	inf.Run(ctx.Done())
	return nil
}

// changed forgets the group of definition obj.
func (f *Follower) changed(obj any, how string) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	group := GroupOf(o.GetName())
	if group == "" {
		return
	}
	if f.Schemas != nil {
		f.Schemas.Forget(group)
	}
	if rm, ok := f.Mapper.(meta.ResettableRESTMapper); ok {
		rm.Reset()
	}
	f.Log.Info("CustomResourceDefinition "+how+": its group's schemas and mappings are read again",
		"definition", o.GetName(), "group", group, "generation", o.GetGeneration())
	if f.Changed != nil {
		f.Changed(group)
	}
}

// GroupOf returns the group of a CustomResourceDefinition from its name
// (<plural>.<group>), "" when the name has no dot.
func GroupOf(name string) string {
	_, group, ok := strings.Cut(name, ".")
	if !ok {
		return ""
	}
	return group
}
