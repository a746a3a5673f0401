package policy

import (
	"errors"
	"time"

	"github.com/driftguard/driftguard/drift"
)

// Input is the document a policy sees as `input`. Its JSON shape is the
// "Policy contract" of the design: admission requests and drift seen by the
// informer (operation DRIFT) use the same shape.
type Input struct {
	// Operation is CREATE, UPDATE, DELETE (admission) or DRIFT (seen by the
	// informer after the fact).
	Operation   string         `json:"operation"`
	User        User           `json:"user"`
	Resource    Resource       `json:"resource"`
	SubResource string         `json:"subResource,omitempty"`
	Object      map[string]any `json:"object,omitempty"`
	OldObject   map[string]any `json:"oldObject,omitempty"`
	Desired     map[string]any `json:"desired,omitempty"`
	Drift       []Change       `json:"drift"`
	// Added and Removed are the paths of Drift that the change adds (a
	// field Git does not set, a sidecar) or removes (a field Git sets).
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
	// FieldManager is the field manager of the newest change the drift
	// watcher saw. Any writer chooses it: a claim, never an identity.
	FieldManager string            `json:"fieldManager,omitempty"`
	Source       Source            `json:"source"`
	Annotations  map[string]string `json:"annotations,omitempty"` // annotations of the incoming object
	DryRun       bool              `json:"dryRun"`
	Guard        string            `json:"guard"`
	// Orphan is true for the CREATE of an object Git does not have in a
	// namespace a Guard owns; Desired is then absent and Source is where the
	// Namespace is in Git.
	Orphan bool `json:"orphan,omitempty"`
	// PolicyData is the Guard's spec.policyData, for policies that differ per Guard.
	PolicyData map[string]string `json:"policyData,omitempty"`
	// GuardSpec is the spec of the Guard that manages the object, as JSON
	// decodes it (enforcement, selfHeal, sync, url, path, ...).
	GuardSpec map[string]any `json:"guardSpec,omitempty"`
}

// User is the identity that made a change.
type User struct {
	Username       string   `json:"username"`
	UID            string   `json:"uid,omitempty"`
	Groups         []string `json:"groups"`
	ServiceAccount bool     `json:"serviceAccount"`
}

// Resource names the object a change applies to.
type Resource struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Change is one field that differs between Git and the cluster.
type Change struct {
	Path    string `json:"path"`    // JSON pointer, e.g. /spec/replicas
	Desired any    `json:"desired"` // Git's value (null where Git sets none)
	Live    any    `json:"live"`    // the value the change writes (null: removed)
	// Old is the value before the change, for an admission request that
	// replaces an object (null: the change adds the field).
	Old any `json:"old,omitempty"`
}

// Source is where in Git the desired object comes from.
type Source struct {
	URL      string `json:"url"`
	Revision string `json:"revision"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
}

// Action is what a policy decided.
type Action string

// The actions a policy may decide.
const (
	Deny   Action = "deny"   // reject the change
	Revert Action = "revert" // let it through (or accept it happened) and put Git's state back
	Allow  Action = "allow"  // accept the change (break-glass, accepted drift)
	Warn   Action = "warn"   // accept the change with a warning
)

// Valid reports whether a is one of the known actions.
func (a Action) Valid() bool {
	switch a {
	case Deny, Revert, Allow, Warn:
		return true
	}
	return false
}

// Decision is the value of data.driftguard.decision.
type Decision struct {
	Action Action `json:"action"`
	Reason string `json:"reason"`
	Rule   string `json:"rule,omitempty"`
	// Temporary, with allow or warn, keeps the change only for the Guard's
	// breakGlassTTL: the drift watcher then reverts it unless Git adopted
	// it. The default policy sets it for break-glass.
	Temporary bool `json:"temporary,omitempty"`
}

// Config is exposed to Rego as data.driftguard.config.
type Config struct {
	// GuardUsers are the identities of the guard itself (always allowed).
	GuardUsers []string `json:"guardUsers"`
	// BreakGlassGroups are groups whose members may change managed objects when
	// the object carries a driftguard.io/break-glass annotation with a reason.
	BreakGlassGroups []string `json:"breakGlassGroups"`
	// Timeout bounds one evaluation of the policy (DefaultTimeout when zero
	// or less): a policy that takes longer fails with an error wrapping
	// ErrTimeout, which the caller treats as any policy error (the webhook
	// applies the failure policy, the drift watcher reverts). It is not
	// visible to Rego.
	Timeout time.Duration `json:"-"`
}

// DefaultTimeout is the evaluation bound of a Config without Timeout. The
// default policy decides in well under a millisecond; a second leaves room
// for large inputs and custom policies while staying below the webhook's
// default deadline (80 % of --webhook-timeout, 4 s).
const DefaultTimeout = time.Second

// ErrTimeout is wrapped by the error of an evaluation that ran out of time.
var ErrTimeout = errors.New("policy evaluation timed out")

// Changes converts the comparison's changes into the policy's input form.
func Changes(cs []drift.Change) []Change {
	out := make([]Change, len(cs))
	for i, c := range cs {
		out[i] = Change{Path: c.Path, Desired: c.Desired, Live: c.Live, Old: c.Old}
	}
	return out
}
