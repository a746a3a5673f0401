package selfheal

import (
	"encoding/json"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/jsonpack"
)

// compactObject is how the drift informers keep a live object: its JSON,
// packed (jsonpack), and beside it only what the informer machinery reads
// (namespace, name, resourceVersion and the inventory label, for keys and
// events). A nested map of a ConfigMap costs several KiB on the heap, its
// packed JSON about a hundred bytes (a Deployment's two hundred); the
// object is decoded again when it is compared, which happens once per event
// and in a full reconcile only when it changed since the last one.
type compactObject struct {
	metav1.ObjectMeta
	gvk schema.GroupVersionKind
	raw []byte
}

var _ runtime.Object = (*compactObject)(nil)

// GetObjectKind implements runtime.Object.
func (c *compactObject) GetObjectKind() schema.ObjectKind { return c }

// GroupVersionKind implements schema.ObjectKind.
func (c *compactObject) GroupVersionKind() schema.GroupVersionKind { return c.gvk }

// SetGroupVersionKind implements schema.ObjectKind.
func (c *compactObject) SetGroupVersionKind(gvk schema.GroupVersionKind) { c.gvk = gvk }

// DeepCopyObject implements runtime.Object. The JSON is never written
// after compact made it, so copies share it.
func (c *compactObject) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// compact turns a (stripped) live object into its compact form, keeping of
// the labels only the one named labelKey.
func compact(u *unstructured.Unstructured, labelKey string) (*compactObject, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s for the cache: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	c := &compactObject{gvk: u.GroupVersionKind(), raw: jsonpack.Pack(raw)}
	c.Namespace, c.Name, c.ResourceVersion = u.GetNamespace(), u.GetName(), u.GetResourceVersion()
	if v, ok := u.GetLabels()[labelKey]; ok {
		c.Labels = guardLabels(labelKey, v)
	}
	return c, nil
}

// labelSets holds one labels map per inventory label and value: the cached
// objects of a Guard share it (nobody writes it: DeepCopyObject copies),
// where a map each would cost a few hundred bytes per object.
var labelSets sync.Map // [2]string{key, value} -> map[string]string

func guardLabels(key, value string) map[string]string {
	k := [2]string{key, value}
	if m, ok := labelSets.Load(k); ok {
		return m.(map[string]string)
	}
	m, _ := labelSets.LoadOrStore(k, map[string]string{key: value})
	return m.(map[string]string)
}

// expand decodes a cached object into a new Unstructured the caller owns.
// Numbers come back as the API machinery decodes them (int64, float64).
func (c *compactObject) expand() (*unstructured.Unstructured, error) {
	raw, err := jsonpack.Unpack(c.raw)
	if err != nil {
		return nil, fmt.Errorf("decode cached %s %s/%s: %w", c.gvk.Kind, c.Namespace, c.Name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("decode cached %s %s/%s: %w", c.gvk.Kind, c.Namespace, c.Name, err)
	}
	return u, nil
}
