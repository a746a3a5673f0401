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
type Mapper struct {
	newMapper func() (meta.RESTMapper, error)

	mu sync.RWMutex
	m  meta.RESTMapper
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
	return &Mapper{newMapper: newMapper, m: m}, nil
}

// Reset forgets every mapping learnt so far. Should a new mapper not be
// made (it asks nothing of the server when made), the old one stays.
func (m *Mapper) Reset() {
	fresh, err := m.newMapper()
	if err != nil {
		return
	}
	m.mu.Lock()
	m.m = fresh
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

// RESTMapping implements meta.RESTMapper.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return m.current().RESTMapping(gk, versions...)
}

// RESTMappings implements meta.RESTMapper.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return m.current().RESTMappings(gk, versions...)
}

// ResourceSingularizer implements meta.RESTMapper.
func (m *Mapper) ResourceSingularizer(resource string) (string, error) {
	return m.current().ResourceSingularizer(resource)
}
