package apply

import "github.com/driftguard/driftguard/render"

// Annotations that make an object of Git a hook (Helm's and Argo CD's).
// Read from the object as Git renders it, never from the live object:
// whoever may edit an object in the cluster cannot make it a hook. Package
// reconcile reads the rest of a hook's annotations and runs it.
const (
	HelmHookAnnotation = "helm.sh/hook"
	ArgoHookAnnotation = "argocd.argoproj.io/hook"
)

// IsHook reports whether Git's object is a hook (Helm's or Argo CD's
// annotation, whatever its value): such an object is never part of the
// desired state the guard keeps in sync.
func IsHook(o *render.Object) bool {
	ann := o.Obj().GetAnnotations()
	_, helm := ann[HelmHookAnnotation]
	_, argo := ann[ArgoHookAnnotation]
	return helm || argo
}
