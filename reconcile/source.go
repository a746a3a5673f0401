package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/gitstore"
)

// Request builds what the fetcher needs from a Guard's spec: where, which
// revision, which path, the credentials of spec.secretRef, and how to
// render (see RenderOptions).
func Request(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string) (gitstore.Request, error) {
	req := gitstore.Request{URL: g.Spec.URL, Ref: g.Spec.Ref, SemVer: g.Spec.SemVer, Path: g.Spec.Path}
	auth, err := Auth(ctx, c, g, defaultNamespace)
	if err != nil {
		return req, err
	}
	req.Auth = auth
	if req.Render, err = RenderOptions(ctx, c, g, defaultNamespace); err != nil {
		return req, err
	}
	return req, nil
}

// Auth reads the Git credentials a Guard names, nil when it names none.
// Errors name the Secret and the key at fault, never a value.
func Auth(ctx context.Context, c client.Reader, g *v1alpha1.Guard, defaultNamespace string) (*gitstore.Auth, error) {
	if g.Spec.SecretRef == nil {
		return nil, nil
	}
	data, err := secretData(ctx, c, *g.Spec.SecretRef, defaultNamespace)
	if err != nil {
		return nil, fmt.Errorf("spec.secretRef: %w", err)
	}
	auth, err := gitstore.AuthFromSecret(data)
	if err != nil {
		return nil, fmt.Errorf("spec.secretRef %s: %w", secretName(*g.Spec.SecretRef, defaultNamespace), err)
	}
	return auth, nil
}

func secretName(ref v1alpha1.SecretReference, defaultNamespace string) string {
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	return ns + "/" + ref.Name
}

func secretData(ctx context.Context, c client.Reader, ref v1alpha1.SecretReference, defaultNamespace string) (map[string][]byte, error) {
	ns := ref.Namespace
	if ns == "" {
		ns = defaultNamespace
	}
	var s corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, &s); err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", ns, ref.Name, err)
	}
	return s.Data, nil
}
