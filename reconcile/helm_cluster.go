package reconcile

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/render"
)

// DefaultValuesKey is the key of a ConfigMap or Secret that
// spec.helm.valuesFrom reads when it names none.
const DefaultValuesKey = "values.yaml"

// RenderCluster is what a render reads from the cluster itself rather
// than from the Guard's settings: the ConfigMaps and Secrets of
// spec.helm.valuesFrom and the cluster's capabilities.
type RenderCluster struct {
	// Values reads spec.helm.valuesFrom: the client of the Guard's identity
	// (its service account, impersonated), so that a Guard reads only what
	// its account may. Nil: the reader of the Guard's other settings.
	Values client.Reader
	// Capabilities tells charts about the cluster; nil renders with Helm's
	// defaults (as driftguard validate does).
	Capabilities *ClusterCapabilities
}

// HelmValuesFrom reads the values of spec.helm.valuesFrom, in order, from
// namespace ns (the guard's own: a reference names no namespace) with c.
// A missing object or key is skipped when the reference is optional.
// Errors name the field, the object and the key, never a value.
func HelmValuesFrom(ctx context.Context, c client.Reader, g *v1alpha1.Guard, ns string) ([]render.HelmValues, error) {
	if g.Spec.Helm == nil || len(g.Spec.Helm.ValuesFrom) == 0 {
		return nil, nil
	}
	var out []render.HelmValues
	for i, ref := range g.Spec.Helm.ValuesFrom {
		field := fmt.Sprintf("spec.helm.valuesFrom[%d]", i)
		key := ref.ValuesKey
		if key == "" {
			key = DefaultValuesKey
		}
		name := types.NamespacedName{Namespace: ns, Name: ref.Name}
		var data []byte
		var found bool
		switch ref.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			err := c.Get(ctx, name, &cm)
			if apierrors.IsNotFound(err) && ref.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: configmap %s: %w", field, name, err)
			}
			var s string
			if s, found = cm.Data[key]; found {
				data = []byte(s)
			} else {
				data, found = cm.BinaryData[key]
			}
		case "Secret":
			var s corev1.Secret
			err := c.Get(ctx, name, &s)
			if apierrors.IsNotFound(err) && ref.Optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s: secret %s: %w", field, name, err)
			}
			data, found = s.Data[key]
		default:
			return nil, fmt.Errorf("%s.kind %q is not ConfigMap or Secret", field, ref.Kind)
		}
		if !found {
			if ref.Optional {
				continue
			}
			return nil, fmt.Errorf("%s: %s %s has no key %s (spec.helm.valuesFrom[%d].valuesKey)", field, ref.Kind, name, key, i)
		}
		out = append(out, render.HelmValues{
			From:       fmt.Sprintf("%s (%s %s, key %s)", field, ref.Kind, name, key),
			Data:       data,
			TargetPath: ref.TargetPath,
			Secret:     ref.Kind == "Secret",
		})
	}
	return out, nil
}

// helmPostRenderers turns spec.helm.postRenderers into the render's.
func helmPostRenderers(h *v1alpha1.HelmSpec) []render.PostRenderer {
	var out []render.PostRenderer
	for _, pr := range h.PostRenderers {
		var r render.PostRenderer
		if pr.Kustomize != nil {
			for _, p := range pr.Kustomize.Patches {
				gp := render.Patch{Patch: p.Patch}
				if p.Target != nil {
					t := *p.Target
					gp.Target = &t
				}
				r.Patches = append(r.Patches, gp)
			}
		}
		out = append(out, r)
	}
	return out
}

// DefaultCapabilitiesTTL is how long ClusterCapabilities keeps an answer.
const DefaultCapabilitiesTTL = time.Minute

// ClusterCapabilities asks the API server, by discovery, for its version
// and the API versions and kinds it serves (Helm's .Capabilities), and
// keeps the answer for TTL, so that every Guard's render in that time
// uses the same one (it is part of the render's cache key) and a new CRD
// is seen within TTL. It is safe for concurrent use.
type ClusterCapabilities struct {
	Discovery discovery.DiscoveryInterface
	// TTL is how long an answer is used; 0 is DefaultCapabilitiesTTL.
	TTL time.Duration
	Log logr.Logger

	mu  sync.Mutex
	cur *render.Capabilities
	at  time.Time
}

// Get returns the capabilities, asking the API server when the last
// answer is older than TTL. When discovery fails, the last answer stays in
// use (logged); with none, the error is returned: rendering with Helm's
// defaults instead would render a different set of objects. When some API
// groups cannot be discovered (an aggregated API that is down), the last
// complete answer stays in use; without one, the groups that answered are
// used, as Helm does.
func (cc *ClusterCapabilities) Get(ctx context.Context) (*render.Capabilities, error) {
	if cc == nil {
		return nil, nil
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	ttl := cc.TTL
	if ttl <= 0 {
		ttl = DefaultCapabilitiesTTL
	}
	if cc.cur != nil && time.Since(cc.at) < ttl {
		return cc.cur, nil
	}
	caps, partial, err := discoverCapabilities(ctx, cc.Discovery)
	switch {
	case err != nil && cc.cur != nil:
		cc.Log.Info("cluster capabilities not refreshed; the last answer stays in use", "error", err.Error(), "age", time.Since(cc.at).Round(time.Second).String())
		cc.at = time.Now() // asked again after TTL, not at every render
		return cc.cur, nil
	case err != nil:
		return nil, fmt.Errorf("the cluster's capabilities for Helm charts (.Capabilities): %w", err)
	case partial != nil && cc.cur != nil:
		cc.Log.Info("some API groups could not be discovered; the last complete capabilities stay in use", "error", partial.Error())
		cc.at = time.Now()
		return cc.cur, nil
	}
	if partial != nil {
		cc.Log.Info("some API groups could not be discovered; charts see the others", "error", partial.Error())
	}
	cc.cur, cc.at = caps, time.Now()
	return caps, nil
}

// discoverCapabilities asks the API server for its version and every
// group version and kind it serves. partial is the error of groups that
// could not be discovered (the others are in caps).
func discoverCapabilities(ctx context.Context, d discovery.DiscoveryInterface) (caps *render.Capabilities, partial, err error) {
	if d == nil {
		return nil, nil, errors.New("no discovery client")
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	v, err := d.ServerVersion()
	if err != nil {
		return nil, nil, fmt.Errorf("server version: %w", err)
	}
	groups, resources, err := d.ServerGroupsAndResources()
	if err != nil {
		if !discovery.IsGroupDiscoveryFailedError(err) {
			return nil, nil, fmt.Errorf("API versions: %w", err)
		}
		partial = err
	}
	seen := map[string]bool{}
	for _, g := range groups {
		for _, gv := range g.Versions {
			seen[gv.GroupVersion] = true
		}
	}
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			seen[path.Join(rl.GroupVersion, r.Kind)] = true
		}
	}
	list := make([]string, 0, len(seen))
	for k := range seen {
		list = append(list, k)
	}
	slices.Sort(list)
	return &render.Capabilities{KubeVersion: v.GitVersion, APIVersions: list}, partial, nil
}
