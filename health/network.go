package health

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EndpointSliceGVK is the kind listed for a Service's endpoints.
var EndpointSliceGVK = schema.GroupVersionKind{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}

// ServiceNameLabel labels the EndpointSlices of a Service with its name.
const ServiceNameLabel = "kubernetes.io/service-name"

// service: ExternalName is Healthy; a LoadBalancer without an address is
// Progressing; a Service without a selector is Healthy (its endpoints are
// not Kubernetes' to make); otherwise it is Healthy when one of its
// EndpointSlices has a ready endpoint, Progressing when none has (saying
// whether there is no EndpointSlice at all, or slices without endpoints:
// no pod matches the selector). Without a lookup the endpoints are not
// checked.
func service(ctx context.Context, o object, lookup Lookup) (Result, error) {
	f := o.f
	typ := orDefault(f.str("spec", "type"), "ClusterIP")
	if typ == "ExternalName" {
		return result(Healthy, "external name %s", f.str("spec", "externalName")), nil
	}
	prefix := ""
	if typ == "LoadBalancer" {
		addr := loadBalancerAddress(f)
		if addr == "" {
			return Result{State: Progressing, Message: "waiting for a load balancer address"}, nil
		}
		prefix = "address " + addr + ", "
	}
	if len(f.object("spec", "selector")) == 0 {
		return Result{State: Healthy, Message: prefix + "no selector: endpoints are not managed by Kubernetes"}, nil
	}
	if lookup == nil {
		return Result{State: Healthy, Message: prefix + "endpoints not checked"}, nil
	}
	sel := labels.SelectorFromSet(labels.Set{ServiceNameLabel: o.u.GetName()})
	slices, err := lookup.List(ctx, EndpointSliceGVK, o.u.GetNamespace(), sel)
	if err != nil {
		return Result{}, fmt.Errorf("look up endpoints: %w", err)
	}
	var ready, notReady int64
	for _, s := range slices {
		sf := &fields{obj: s.Object}
		for i, ep := range sf.objects("endpoints") {
			e := sf.sub(ep, indexed([]string{"endpoints"}, i)...)
			// A ready condition that is not set means ready.
			if !e.has("conditions", "ready") || e.boolean("conditions", "ready") {
				ready++
			} else {
				notReady++
			}
		}
		if sf.err != nil {
			return Result{}, fmt.Errorf("read %s: %w", Describe(s), sf.err)
		}
	}
	switch {
	case ready > 0:
		return Result{State: Healthy, Message: prefix + plural(ready, "ready endpoint")}, nil
	case notReady > 0:
		return result(Progressing, "%snone of %s ready", prefix, plural(notReady, "endpoint")), nil
	}
	if len(slices) == 0 {
		// The EndpointSlice controller makes a slice, empty if need be, for
		// every Service with a selector: none at all means it has not yet
		// (or, for objects read from a file, that the file holds none).
		return result(Progressing, "%sno EndpointSlice labelled %s=%s", prefix, ServiceNameLabel, o.u.GetName()), nil
	}
	return Result{State: Progressing, Message: prefix + "no endpoints: no pod matches the selector"}, nil
}

// loadBalancerAddress returns the addresses in status.loadBalancer.ingress,
// comma-separated; "" when there is none.
func loadBalancerAddress(f *fields) string {
	var addrs []string
	for i, in := range f.objects("status", "loadBalancer", "ingress") {
		s := f.sub(in, indexed([]string{"status", "loadBalancer", "ingress"}, i)...)
		addr := s.str("ip")
		if addr == "" {
			addr = s.str("hostname")
		}
		if addr == "" {
			addr = "(no ip or hostname)"
		}
		addrs = append(addrs, addr)
	}
	return strings.Join(addrs, ",")
}

// ingress: Healthy once the ingress controller has published an address in
// status.loadBalancer.ingress, Progressing until then.
func ingress(f *fields) Result {
	if addr := loadBalancerAddress(f); addr != "" {
		return Result{State: Healthy, Message: "address " + addr}
	}
	return Result{State: Progressing, Message: "waiting for an address from the ingress controller"}
}
