package driftlists

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := definitions.NewMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
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
