package health

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PodGVK is the kind listed for the pods of a Deployment.
var PodGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

// deploymentWithPods is the Deployment rule with its pods when there is a
// lookup: a Deployment that its own status calls Healthy or Progressing is
// Degraded while one of its pods crash-loops or cannot start a container
// (CrashingPods). Its status alone flips with every restart of such a pod,
// Progressing while the pod backs off and Healthy while it runs for a
// moment, as Argo CD and kstatus read it; the pods say what is going on.
func deploymentWithPods(ctx context.Context, o object, lookup Lookup) (Result, error) {
	r := deployment(o.f)
	if lookup == nil || (r.State != Healthy && r.State != Progressing) || r.NoPods || o.f.err != nil {
		return r, nil
	}
	pr, crashing, err := crashingPodsAt(ctx, o.u, lookup, o.now)
	if err != nil || !crashing {
		return r, err
	}
	return pr, nil
}

// CrashingPods returns Degraded and true when a pod of Deployment deploy
// (one its ReplicaSets own, not being deleted) crash-loops or cannot start
// a container, as the Pod rule tells it (a container restarted after it
// exited, including one running again for less than RestartWindow; a
// container waiting with a reason such as ImagePullBackOff). The message
// names the first such pod by name and how many there are; Until is set
// when the answer holds only until a restart window ends. Only
// deploy's metadata and spec.selector are read: a cached object without
// status will do.
func CrashingPods(ctx context.Context, deploy *unstructured.Unstructured, lookup Lookup) (Result, bool, error) {
	return crashingPodsAt(ctx, deploy, lookup, time.Now())
}

func crashingPodsAt(ctx context.Context, deploy *unstructured.Unstructured, lookup Lookup, now time.Time) (Result, bool, error) {
	raw, ok, _ := unstructured.NestedMap(deploy.Object, "spec", "selector")
	if !ok || len(raw) == 0 {
		return Result{}, false, nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return Result{}, false, fmt.Errorf("read spec.selector of %s: %w", Describe(deploy), err)
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return Result{}, false, nil // the API server refuses such a selector
	}
	pods, err := lookup.List(ctx, PodGVK, deploy.GetNamespace(), sel)
	if err != nil {
		return Result{}, false, fmt.Errorf("look up the pods of %s: %w", Describe(deploy), err)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].GetName() < pods[j].GetName() })
	var (
		first Result
		name  string
		n     int
	)
	for _, p := range pods {
		if p.GetDeletionTimestamp() != nil || !ownedByDeployment(p, deploy.GetName()) {
			continue
		}
		r, bad := podTrouble(p, now)
		if !bad {
			continue
		}
		n++
		if n == 1 {
			first, name = r, p.GetName()
		}
	}
	if n == 0 {
		return Result{}, false, nil
	}
	msg := "pod " + name + ": " + first.Message
	if n > 1 {
		msg = fmt.Sprintf("%d pods crash-looping or not starting; %s", n, msg)
	}
	return Result{State: Degraded, Message: msg, Until: first.Until}, true, nil
}

// ownedByDeployment reports whether pod's controller is a ReplicaSet of
// the Deployment named name (ReplicaSets are named name-<template hash>).
func ownedByDeployment(pod *unstructured.Unstructured, name string) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == "ReplicaSet" && strings.HasPrefix(ref.Name, name+"-") &&
		strings.HasPrefix(ref.APIVersion, "apps/")
}

// podTrouble returns the Pod rule's Degraded result for a pod that is not
// done (not Succeeded or Failed: an evicted pod the ReplicaSet has
// replaced is not the Deployment's trouble) and has a crashing or stuck
// container.
func podTrouble(p *unstructured.Unstructured, now time.Time) (Result, bool) {
	f := &fields{obj: p.Object}
	switch f.str("status", "phase") {
	case "Succeeded", "Failed":
		return Result{}, false
	}
	policy := orDefault(f.str("spec", "restartPolicy"), "Always")
	if r, ok := crashingContainer(f, policy, now); ok && f.err == nil {
		return r, true
	}
	if msg, ok := stuckContainer(f); ok && f.err == nil {
		return Result{State: Degraded, Message: msg}, true
	}
	return Result{}, false
}
