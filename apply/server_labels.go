package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels the API server puts on a Job's pod template when it generates the
// Job's selector (spec.manualSelector unset), and so on a Job without
// labels of its own.
const (
	JobNameLabel             = "batch.kubernetes.io/job-name"
	LegacyJobNameLabel       = "job-name"
	ControllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	LegacyControllerUIDLabel = "controller-uid"
)

var (
	jobKind                   = schema.GroupKind{Group: "batch", Kind: "Job"}
	replicationControllerKind = schema.GroupKind{Kind: "ReplicationController"}
)

// ServerDefaultedLabels adds to labels, the labels of an object Git gives
// none, what the API server gives such an object as its labels: its
// defaulting copies the pod template's labels to a Job (batch/v1
// SetDefaults_Job) and a ReplicationController (v1
// SetDefaults_ReplicationController) only while the object has no labels,
// so the guard's own inventory label would stop it. A Job's template has,
// besides Git's labels, the job-name labels the server adds when it
// generates the selector; the controller-uid labels need the UID, which
// the apply adds (withControllerUID). No other served kind defaults
// anything from, or depending on, its labels: the apps/v1beta1 and
// extensions/v1beta1 kinds that did are no longer served, and a
// Namespace's kubernetes.io/metadata.name label is set whatever its labels.
// It reports whether it added anything.
func ServerDefaultedLabels(u *unstructured.Unstructured, labels map[string]any) bool {
	gk := u.GroupVersionKind().GroupKind()
	if gk != jobKind && gk != replicationControllerKind {
		return false
	}
	template, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "metadata", "labels")
	added := false
	for k, v := range template {
		if s, ok := v.(string); ok {
			labels[k], added = s, true
		}
	}
	// A Job named by generateName (a hook) has no name to label it with yet.
	if gk == jobKind && !manualSelector(u) && u.GetName() != "" {
		for _, k := range []string{JobNameLabel, LegacyJobNameLabel} {
			if _, ok := template[k]; !ok {
				labels[k], added = u.GetName(), true
			}
		}
	}
	return added
}

func manualSelector(u *unstructured.Unstructured) bool {
	v, _, _ := unstructured.NestedBool(u.Object, "spec", "manualSelector")
	return v
}

// needsControllerUID reports whether the guard applies a Job with the
// controller-uid labels of its UID: a Job labelled with its own job-name
// (ServerDefaultedLabels gave it the labels the API server gives a Job
// without labels) and without those labels in Git.
func needsControllerUID(u *unstructured.Unstructured) bool {
	if u.GroupVersionKind().GroupKind() != jobKind || manualSelector(u) {
		return false
	}
	labels := u.GetLabels()
	if u.GetName() == "" || labels[JobNameLabel] != u.GetName() {
		return false
	}
	_, a := labels[ControllerUIDLabel]
	_, b := labels[LegacyControllerUIDLabel]
	return !a && !b
}

// withControllerUID sets the controller-uid labels of u to uid, as the API
// server sets them on the Job's pod template.
func withControllerUID(u *unstructured.Unstructured, uid types.UID) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ControllerUIDLabel] = string(uid)
	labels[LegacyControllerUIDLabel] = string(uid)
	u.SetLabels(labels)
}

// AsApplied returns desired as the guard's apply over live sends it: with
// a Job's controller-uid labels (ServerDefaultedLabels) of live's UID.
// desired is not changed.
func AsApplied(desired, live *unstructured.Unstructured) *unstructured.Unstructured {
	if live == nil || !needsControllerUID(desired) {
		return desired
	}
	u := desired.DeepCopy()
	withControllerUID(u, live.GetUID())
	return u
}

// hasControllerUID reports whether u carries the controller-uid labels of
// its own UID.
func hasControllerUID(u *unstructured.Unstructured) bool {
	labels := u.GetLabels()
	return u.GetUID() != "" && labels[ControllerUIDLabel] == string(u.GetUID()) && labels[LegacyControllerUIDLabel] == string(u.GetUID())
}

// LabelCreatedJob gives a Job that Git gave no labels, just created (a hook:
// package reconcile creates it with its hook label, which stops the API
// server's defaulting), the labels the API server gives such a Job: its
// job-name labels (when it was named by generateName, the name only
// the answer tells) and its controller-uid labels, the values of its pod
// template's, as for a Job applied as a managed object
// (ServerDefaultedLabels, withControllerUID). The patch names the UID, so
// it never labels another object of that name. u is updated in place.
func (a *Applier) LabelCreatedJob(ctx context.Context, u *unstructured.Unstructured) error {
	if u.GroupVersionKind().GroupKind() != jobKind || manualSelector(u) {
		return nil
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	add := map[string]any{}
	withControllerUID(u, u.GetUID())
	for k, v := range u.GetLabels() {
		if labels[k] != v {
			add[k] = v
		}
	}
	template, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
	for _, k := range []string{JobNameLabel, LegacyJobNameLabel} {
		if _, ok := labels[k]; !ok && template[k] == u.GetName() {
			add[k] = u.GetName()
		}
	}
	if len(add) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": u.GetUID(), "labels": add}})
	if err != nil {
		return fmt.Errorf("label the hook Job: %w", err)
	}
	if err := a.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("label the hook Job with its job-name and controller-uid: %w", a.ExplainForbidden(err, "patch", u.GroupVersionKind(), u.GetNamespace()))
	}
	return nil
}
