package render

import (
	"encoding/json"
	"reflect"
	"sync/atomic"
	"weak"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/driftguard/driftguard/drift"
	"github.com/driftguard/driftguard/jsonpack"
	"github.com/driftguard/driftguard/redact"
)

// Object is one rendered manifest and where it comes from.
//
// While a snapshot is rendered and decorated its objects are nested maps
// that may be changed (SetObj). Once finished (Snapshot.Freeze) an object
// keeps only its JSON, packed (jsonpack), and Obj decodes it again when
// asked: a ConfigMap costs about a hundred bytes that way instead of several
// KiB of maps, which is most of what a guard of thousands of objects holds. A
// decoding is kept, through a weak pointer, for as long as anyone still uses
// it, so the calls of one comparison decode once.
type Object struct {
	Key    ObjectKey
	Source Source

	gvk     schema.GroupVersionKind
	obj     *unstructured.Unstructured // until frozen, and when it cannot be
	raw     []byte                     // the object's JSON, packed, once frozen
	decoded atomic.Pointer[weak.Pointer[unstructured.Unstructured]]
	server  atomic.Pointer[drift.ServerValues] // see ServerValues
	verdict atomic.Pointer[Verdict]            // see InSync
	// sensitive are the secret values of the render the object comes
	// from (shared by all its objects); nil when it had none.
	sensitive *redact.Sensitive
}

// Sensitive returns the values the render of o marked secret: decrypted
// SOPS values, variables from Secrets, the data of the Secrets it
// rendered, its age keys. Nil when there are none.
func (o *Object) Sensitive() *redact.Sensitive { return o.sensitive }

// NewObjectFrom is NewObject for a changed copy of from (a decorated
// object): the same source, and from's sensitive values.
func NewObjectFrom(u *unstructured.Unstructured, from *Object) *Object {
	o := NewObject(u, from.Source)
	o.sensitive = from.sensitive
	return o
}

// NewObject returns the object for u (JSON-compatible values only), keyed
// by u's kind, namespace and name.
func NewObject(u *unstructured.Unstructured, src Source) *Object {
	o := &Object{Source: src}
	o.SetObj(u)
	return o
}

// SetObj replaces the object and its key, before its snapshot is frozen.
func (o *Object) SetObj(u *unstructured.Unstructured) {
	o.obj, o.raw, o.Key, o.gvk = u, nil, KeyOf(u), u.GroupVersionKind()
	o.decoded.Store(nil)
	o.verdict.Store(nil)
}

// Obj returns the object. Callers must not modify it, except while its
// snapshot is built (Snapshot.Claim), before Freeze.
func (o *Object) Obj() *unstructured.Unstructured {
	if o.raw == nil {
		return o.obj
	}
	if p := o.decoded.Load(); p != nil {
		if u := p.Value(); u != nil {
			return u
		}
	}
	var m map[string]any
	raw, err := jsonpack.Unpack(o.raw)
	if err == nil {
		err = utiljson.Unmarshal(raw, &m)
	}
	if err != nil || m == nil {
		// Unreachable: freeze packed what encoding/json wrote from a map.
		m = map[string]any{"apiVersion": o.gvk.GroupVersion().String(), "kind": o.gvk.Kind}
	}
	u := &unstructured.Unstructured{Object: m}
	p := weak.Make(u)
	o.decoded.Store(&p)
	return u
}

// GVK returns the object's group, version and kind without decoding it.
func (o *Object) GVK() schema.GroupVersionKind { return o.gvk }

// freeze keeps the object as JSON from now on. An object JSON cannot hold
// (a NaN, say) stays as it is.
func (o *Object) freeze() {
	if o.raw != nil || o.obj == nil {
		return
	}
	raw, err := json.Marshal(o.obj.Object)
	if err != nil {
		return
	}
	o.raw, o.obj = jsonpack.Pack(raw), nil
}

// sameContent reports whether o and p hold the same object.
func (o *Object) sameContent(p *Object) bool {
	if o.raw != nil && p.raw != nil {
		// encoding/json sorts map keys; the same JSON packs the same.
		return string(o.raw) == string(p.raw)
	}
	return reflect.DeepEqual(o.Obj().Object, p.Obj().Object)
}
