package render

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/drift"
)

// Verdict is a comparison's answer kept with the object: the live object,
// at ResourceVersion, was in sync with it under Inputs (a comparable value
// naming what else the comparison read, such as ignore rules and schema),
// and had UID. A full reconcile that finds the same resourceVersion and the
// same inputs need not decode and compare the two again.
type Verdict struct {
	ResourceVersion string
	Inputs          any
	UID             types.UID
	server          *drift.ServerValues // the server values it was made with
}

// InSync returns the verdict kept for the object, false when there is none
// or the object's server values changed since it was made.
func (o *Object) InSync() (Verdict, bool) {
	v := o.verdict.Load()
	if v == nil || v.server != o.server.Load() {
		return Verdict{}, false
	}
	return *v, true
}

// KeepInSync records that compare found the live object at resourceVersion
// rv in sync under inputs (which must be comparable); compare runs here, so
// that the verdict names the server values read before it. It returns what
// compare returned.
func (o *Object) KeepInSync(rv string, inputs any, compare func() (types.UID, bool)) (types.UID, bool) {
	server := o.server.Load()
	uid, ok := compare()
	if ok && rv != "" {
		o.verdict.Store(&Verdict{ResourceVersion: rv, Inputs: inputs, UID: uid, server: server})
	}
	return uid, ok
}
