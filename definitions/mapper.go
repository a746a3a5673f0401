package definitions

import (
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Mapper is a REST mapper that can be reset (meta.ResettableRESTMapper):
// controller-runtime's dynamic mapper, which learns a kind it does not
// know on first use but never forgets one it knows, made again on Reset.
// The new one asks discovery again as kinds are asked for.
//
// The mapping of a kind at a given version, once found, is kept until
// Reset: every client call and every object a revision decorates asks for
// one, and the dynamic mapper builds its answer anew each time (a sixth of
// the guard's CPU in a revision of 1,000 ConfigMaps that changed one).
// Only a definition can change such a mapping, and the Follower resets the
// Mapper whenever one is added, changed or deleted. Only mappings found
// are kept (a kind Git names but the server does not serve is asked again),
// so they are at most the kinds the server serves. Mappings asked for
// without a version are not kept: the preferred version moves as versions
// are served.
type Mapper struct {
	newMapper func() (meta.RESTMapper, error)

	mu       sync.RWMutex
	m        meta.RESTMapper
	mappings map[versionedKind]meta.RESTMapping // of m
}

// versionedKind is a kind at one version.
type versionedKind struct {
	gk      schema.GroupKind
	version string
}

var _ meta.ResettableRESTMapper = (*Mapper)(nil)

// NewMapper returns a Mapper over discovery of the API server of cfg; its
// signature is that of a manager's MapperProvider.
func NewMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	newMapper := func() (meta.RESTMapper, error) { return apiutil.NewDynamicRESTMapper(cfg, httpClient) }
	m, err := newMapper()
	if err != nil {
		return nil, fmt.Errorf("REST mapper: %w", err)
	}
	return &Mapper{newMapper: newMapper, m: m, mappings: map[versionedKind]meta.RESTMapping{}}, nil
}

// Reset forgets every mapping learnt so far. Should a new mapper not be
// made (it asks nothing of the server when made), the old one stays.
func (m *Mapper) Reset() {
	fresh, err := m.newMapper()
	if err != nil {
		return
	}
	m.mu.Lock()
	m.m, m.mappings = fresh, map[versionedKind]meta.RESTMapping{}
	m.mu.Unlock()
}

func (m *Mapper) current() meta.RESTMapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.m
}

// KindFor implements meta.RESTMapper.
func (m *Mapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return m.current().KindFor(r)
}

// KindsFor implements meta.RESTMapper.
func (m *Mapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return m.current().KindsFor(r)
}

// ResourceFor implements meta.RESTMapper.
func (m *Mapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return m.current().ResourceFor(r)
}

// ResourcesFor implements meta.RESTMapper.
func (m *Mapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return m.current().ResourcesFor(r)
}

// RESTMapping implements meta.RESTMapper. The caller gets a copy it may
// change.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) != 1 || versions[0] == "" {
		return m.current().RESTMapping(gk, versions...)
	}
	key := versionedKind{gk: gk, version: versions[0]}
	m.mu.RLock()
	cur := m.m
	kept, ok := m.mappings[key]
	m.mu.RUnlock()
	if ok {
		return &kept, nil
	}
	mapping, err := cur.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.m == cur { // not reset meanwhile
		m.mappings[key] = *mapping
	}
	m.mu.Unlock()
	return mapping, nil
}

// RESTMappings implements meta.RESTMapper.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return m.current().RESTMappings(gk, versions...)
}

// ResourceSingularizer implements meta.RESTMapper.
func (m *Mapper) ResourceSingularizer(resource string) (string, error) {
	return m.current().ResourceSingularizer(resource)
}
