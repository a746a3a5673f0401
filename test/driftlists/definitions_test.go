package driftlists

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/driftguard/driftguard/definitions"
	"github.com/driftguard/driftguard/drift/schemas"
	"github.com/driftguard/driftguard/test/wait"
)

// TestDefinitionChangedOutOfBand: a CRD that someone else changes while
// the guard runs (here the test's own client, as kubectl would) is
// followed: the list semantics of its new schema are used, and the REST
// mapping knows its new preferred version, without a restart and without
// the guard applying a definition.
func TestDefinitionChangedOutOfBand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mapper := newMapper(t)
	cache := schemas.New(disc, logr.Discard())
	changed := make(chan string, 16)
	f := &definitions.Follower{Config: cfg, Schemas: cache, Mapper: mapper, Changed: func(g string) { changed <- g }}
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	defer func() { cancel(); <-done }()

	gk := schema.GroupKind{Group: "follow.driftguard.io", Kind: "Sprocket"}
	gvk := gk.WithVersion("v1")
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal([]byte(tagsCRD(gk)), &crd); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &crd); err != nil {
		t.Fatalf("create the definition: %v", err)
	}
	drifts := func(want bool) { t.Helper(); tagsDrift(t, cache, gvk, want) }
	drifts(false)
	preferred := func(want string) {
		t.Helper()
		wait.Eventually(t, 60*time.Second, "preferred version "+want, func() error {
			m, err := mapper.RESTMapping(gk)
			if err != nil {
				return err
			}
			if m.GroupVersionKind.Version != want {
				return fmt.Errorf("mapped to %s", m.GroupVersionKind)
			}
			return nil
		})
	}
	preferred("v1")

	// Out of band: the list becomes atomic, and a v2 is served (the
	// preferred version of the two).
	if err := admin.Get(ctx, client.ObjectKey{Name: crd.Name}, &crd); err != nil {
		t.Fatal(err)
	}
	v1 := &crd.Spec.Versions[0]
	v1.Schema.OpenAPIV3Schema.Properties["spec"].Properties["tags"] = apiextensionsv1.JSONSchemaProps{Type: "array",
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}
	v2 := *v1.DeepCopy()
	v2.Name, v2.Storage = "v2", false
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	if err := admin.Update(ctx, &crd, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatalf("change the definition: %v", err)
	}
	select {
	case g := <-changed:
		if g != "follow.driftguard.io" {
			t.Errorf("change of group %q", g)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the follower saw no change of the definition")
	}
	drifts(true)
	preferred("v2")
}

// TestDefinitionRecreatedWithOtherScope: the Mapper keeps the mapping of a
// kind at a version, and a definition deleted and made again with the
// other scope is mapped with its new scope once the Follower saw it, as a
// guard would map the objects of the next revision.
func TestDefinitionRecreatedWithOtherScope(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mapper := newMapper(t)
	f := &definitions.Follower{Config: cfg, Schemas: schemas.New(disc, logr.Discard()), Mapper: mapper}
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()
	defer func() { cancel(); <-done }()

	gk := schema.GroupKind{Group: "rescope.driftguard.io", Kind: "Flange"}
	scope := func(want meta.RESTScopeName) {
		t.Helper()
		wait.Eventually(t, 60*time.Second, "mapped with scope "+string(want), func() error {
			m, err := mapper.RESTMapping(gk, "v1")
			if err != nil {
				return err
			}
			if got := m.Scope.Name(); got != want {
				return fmt.Errorf("scope %s", got)
			}
			return nil
		})
	}
	create := func(s apiextensionsv1.ResourceScope) *apiextensionsv1.CustomResourceDefinition {
		t.Helper()
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal([]byte(tagsCRD(gk)), &crd); err != nil {
			t.Fatal(err)
		}
		crd.Spec.Scope = s
		if err := admin.Create(ctx, &crd); err != nil {
			t.Fatalf("create the definition (%s): %v", s, err)
		}
		return &crd
	}
	crd := create(apiextensionsv1.NamespaceScoped)
	scope(meta.RESTScopeNameNamespace)
	// Kept: asked again, the same answer, a copy the caller may change.
	m, err := mapper.RESTMapping(gk, "v1")
	if err != nil || m.Scope.Name() != meta.RESTScopeNameNamespace || m.Resource.Resource != "flanges" {
		t.Fatalf("kept mapping %+v, %v", m, err)
	}
	m.Resource.Resource = "changed by a caller"
	if again, err := mapper.RESTMapping(gk, "v1"); err != nil || again.Resource.Resource != "flanges" {
		t.Fatalf("mapping after a caller changed its copy: %+v, %v", again, err)
	}

	if err := admin.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 60*time.Second, "the definition gone", func() error {
		var live apiextensionsv1.CustomResourceDefinition
		err := admin.Get(ctx, client.ObjectKeyFromObject(crd), &live)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		// The API server's finalizer removes its instances first: say
		// where it is.
		var conds []string
		for _, c := range live.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
		return fmt.Errorf("still there: finalizers %v, conditions %v", live.Finalizers, conds)
	})
	create(apiextensionsv1.ClusterScoped)
	scope(meta.RESTScopeNameRoot)
}

// newMapper is a definitions.Mapper of the test's API server.
func newMapper(t *testing.T) meta.RESTMapper {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := definitions.NewMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return mapper
}
