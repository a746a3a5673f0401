package decision

import (
	"strings"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/policy"
	"github.com/driftguard/driftguard/render"
)

// Operations of a change. Admission requests use their own (CREATE, UPDATE,
// DELETE); a change the drift watcher sees after the fact is Drift.
const (
	Create = "CREATE"
	Update = "UPDATE"
	Delete = "DELETE"
	Drift  = "DRIFT"
)

// Unknown is the user of a change nobody can be named for (no verified
// stamp, no authenticated user).
const Unknown = "unknown"

// Change is what the webhook or the drift watcher knows about one change of
// a managed object (or, for an orphan, of an object in a namespace a Guard
// owns).
type Change struct {
	// Operation is CREATE, UPDATE or DELETE at admission, DRIFT after the fact.
	Operation string
	// Gone: the drift watcher found the object deleted (Operation DRIFT).
	Gone bool
	// User is who made the change as the API server authenticated them (or
	// a verified stamp says); an empty Username is Unknown.
	User     string
	UID      string
	Groups   []string
	Resource policy.Resource
	// SubResource is scale, ephemeralcontainers, resize, or empty.
	SubResource string
	// Object is the incoming (admission) or live (drift) object; OldObject
	// the object an UPDATE replaces. Both are redacted for the policy here.
	Object    map[string]any
	OldObject map[string]any
	// Desired is the object as Git declares it; nil for an orphan.
	Desired *render.Object
	// Source is where in Git the object (for an orphan, its Namespace) is.
	Source render.Source
	// Changes are what the change changes (package drift).
	Changes []drift.Change
	// FieldManager is the drift watcher's newest field manager: a claim
	// anyone makes, never an identity.
	FieldManager string
	Orphan       bool
	DryRun       bool
	Guard        string
}

// afterTheFact reports whether the change has already happened: drift the
// watcher saw, which nothing can deny any more.
func (c Change) afterTheFact() bool { return c.Operation == Drift }

// objectEnforcement is the object's driftguard.io/enforcement annotation in
// Git ("" for none, and for an orphan).
func (c Change) objectEnforcement() string {
	if c.Desired == nil {
		return ""
	}
	return c.Desired.Obj().GetAnnotations()[v1alpha1.EnforcementAnnotation]
}

// input is the policy's input for c; guards gives the Guard's policy data
// and spec (nil: none).
func (c Change) input(guards Guards) policy.Input {
	in := policy.Input{
		Operation:    c.Operation,
		User:         userOf(c.User, c.UID, c.Groups),
		Resource:     c.Resource,
		SubResource:  c.SubResource,
		FieldManager: c.FieldManager,
		Source:       policy.Source(c.Source),
		Annotations:  annotationsOf(c.Object),
		DryRun:       c.DryRun,
		Guard:        c.Guard,
		Orphan:       c.Orphan,
	}
	if c.Object != nil {
		in.Object = drift.RedactObject(c.Object)
	}
	if c.OldObject != nil {
		in.OldObject = drift.RedactObject(c.OldObject)
	}
	if c.Desired != nil {
		in.Desired = drift.RedactObject(c.Desired.Obj().Object)
	}
	switch {
	case c.Orphan:
		in.Drift = []policy.Change{} // nothing in Git to differ from
	case c.Operation == Delete || c.Gone:
		in.Drift = []policy.Change{{Path: "", Desired: "present", Live: nil}}
		in.Added, in.Removed = drift.AddedPaths(c.Changes), drift.RemovedPaths(c.Changes)
	default:
		in.Drift = policy.Changes(c.Changes)
		in.Added, in.Removed = drift.AddedPaths(c.Changes), drift.RemovedPaths(c.Changes)
	}
	if guards != nil {
		in.PolicyData, in.GuardSpec = guards.PolicyData(c.Guard), guards.GuardSpec(c.Guard)
	}
	return in
}

// userOf is the policy's user: Unknown when nobody is named.
func userOf(name, uid string, groups []string) policy.User {
	if name == "" {
		name = Unknown
	}
	return policy.User{Username: name, UID: uid, Groups: groups, ServiceAccount: strings.HasPrefix(name, "system:serviceaccount:")}
}

// annotationsOf returns the string annotations of obj (nil when none). The
// last-applied-configuration a client-side kubectl apply writes holds the
// whole object, a Secret's values in clear among it: the policy sees its
// digest, never the text.
func annotationsOf(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if len(ann) == 0 {
		return nil
	}
	out := make(map[string]string, len(ann))
	for k, v := range ann {
		if s, ok := v.(string); ok {
			if k == lastApplied {
				s = drift.RedactValue(s)
			}
			out[k] = s
		}
	}
	return out
}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
