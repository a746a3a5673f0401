package apply

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftguard/driftguard/render"
)

func TestStageOrdersDefinitionsFirst(t *testing.T) {
	mk := func(apiVersion, kind, name string) *render.Object {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}}
		return render.NewObject(u, render.Source{})
	}
	objs := []*render.Object{
		mk("apps/v1", "Deployment", "web"),
		mk("v1", "Namespace", "shop"),
		mk("example.com/v1", "Widget", "w"),
		mk("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com"),
		mk("v1", "ConfigMap", "cfg"),
	}
	first, rest := stage(objs)
	names := func(os []*render.Object) []string {
		var out []string
		for _, o := range os {
			out = append(out, o.Key.Name)
		}
		return out
	}
	if got, want := names(first), []string{"widgets.example.com", "shop"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first stage = %v, want %v", got, want)
	}
	if got, want := names(rest), []string{"web", "w", "cfg"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second stage = %v, want %v (file order kept)", got, want)
	}
}

func TestUnreachable(t *testing.T) {
	refused := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443/api/v1/namespaces/shop/configmaps/web",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	gr := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("apply cm (a.yaml:1): %w", refused), true},
		{"service unavailable", apierrors.NewServiceUnavailable("apiserver is shutting down"), true},
		{"invalid object", apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "web", nil), false},
		{"forbidden", apierrors.NewForbidden(gr, "web", errors.New("denied")), false},
		{"conflict", apierrors.NewConflict(gr, "web", errors.New("changed")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unreachable(tt.err); got != tt.want {
				t.Fatalf("Unreachable(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
