package reconcile

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/source"
)

// secrets is a client.Reader of a fixed set of Secrets.
type secrets map[client.ObjectKey]map[string][]byte

func (s secrets) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	data, ok := s[key]
	sec, isSecret := obj.(*corev1.Secret)
	if !ok || !isSecret {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	sec.Data = data
	return nil
}

func (s secrets) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not listed")
}

// TestRequestRefusesCredentialsOverPlainHTTP: the credentials of a Guard's
// secretRef never go to a plain http:// URL (a chart repository's only with
// insecure: true); the error names the Guard and the Secret, never a value.
func TestRequestRefusesCredentialsOverPlainHTTP(t *testing.T) {
	c := secrets{
		{Namespace: "driftguard", Name: "basic"}: {"username": []byte("deploy"), "password": []byte("SECRET")},
		{Namespace: "git", Name: "token"}:        {"bearerToken": []byte("SECRET")},
	}
	basic := &v1alpha1.SecretReference{Name: "basic"}
	token := &v1alpha1.SecretReference{Namespace: "git", Name: "token"}
	tests := []struct {
		name string
		spec v1alpha1.GuardSpec
		want string // the error, "" for none
	}{
		{"git basic auth over http", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "http://git.example/infra.git", SecretRef: basic}},
			"guard shop: spec.git.secretRef driftguard/basic: the username and password (basic auth) would go in clear text to http://git.example: use an https:// URL: credentials are never sent over plain http://"},
		{"git basic auth over http to loopback", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "http://127.0.0.1:3000/infra.git", SecretRef: basic}},
			"guard shop: spec.git.secretRef driftguard/basic: the username and password (basic auth) would go in clear text to http://127.0.0.1:3000"},
		{"git token over http", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "http://git.example/infra.git", SecretRef: token}},
			"guard shop: spec.git.secretRef git/token: the bearerToken would go in clear text to http://git.example"},
		{"git basic auth over https", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "https://git.example/infra.git", SecretRef: basic}}, ""},
		{"git over http without credentials", v1alpha1.GuardSpec{Git: &v1alpha1.GitSource{URL: "http://git.example/infra.git"}}, ""},
		{"chart repository over http", v1alpha1.GuardSpec{HelmRepository: &v1alpha1.HelmRepositorySource{URL: "http://charts.example", Chart: "web", SecretRef: basic}},
			"guard shop: spec.helmRepository.secretRef driftguard/basic: the username and password (basic auth) would go in clear text to http://charts.example: use an https:// URL, or set spec.helmRepository.insecure to true"},
		{"chart repository over http, insecure", v1alpha1.GuardSpec{HelmRepository: &v1alpha1.HelmRepositorySource{URL: "http://charts.example", Chart: "web", SecretRef: basic, Insecure: true}}, ""},
		{"chart repository over https", v1alpha1.GuardSpec{HelmRepository: &v1alpha1.HelmRepositorySource{URL: "https://charts.example", Chart: "web", SecretRef: token}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &v1alpha1.Guard{ObjectMeta: metav1.ObjectMeta{Name: "shop"}, Spec: tt.spec}
			_, err := Request(context.Background(), c, g, "driftguard")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Request: %v", err)
				}
				return
			}
			if !errors.Is(err, source.ErrPlainHTTPCredentials) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %s…", err, tt.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("the error holds a credential: %v", err)
			}
		})
	}
}
