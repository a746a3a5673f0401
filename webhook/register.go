package webhook

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Registration describes how the API server reaches the webhook.
type Registration struct {
	// Name of the ValidatingWebhookConfiguration.
	Name string
	// URL of the webhook server when the guard runs outside the cluster
	// (for example https://127.0.0.1:9443); the paths are appended.
	URL string
	// Service, when set, is used instead of URL: namespace and name of the
	// Service in front of the guard, and its port.
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	// CABundle is the PEM CA the API server trusts for the webhook.
	CABundle []byte
	// FailurePolicy is Fail or Ignore.
	FailurePolicy admissionregistrationv1.FailurePolicyType
	// TimeoutSeconds the API server waits for an answer.
	TimeoutSeconds int32
	// LabelKey marks managed objects; only they are sent to the webhook.
	LabelKey string
	// ExcludeNamespaces are never sent to the webhook (kube-system and the
	// guard's own namespace).
	ExcludeNamespaces []string
}

// Paths the webhook server serves.
const (
	ValidatePath = "/validate"
	HealthPath   = "/healthz"
)

// Configuration builds the ValidatingWebhookConfiguration. It has two
// webhooks: one for managed objects, selected by the inventory label, and one
// for the scale subresource, whose requests carry no labels to select on.
func (r Registration) Configuration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	fp := r.FailurePolicy
	if fp == "" {
		fp = admissionregistrationv1.Ignore
	}
	timeout := r.TimeoutSeconds
	if timeout == 0 {
		timeout = 5
	}
	exact := admissionregistrationv1.Equivalent
	nsSelector := &metav1.LabelSelector{}
	if len(r.ExcludeNamespaces) > 0 {
		nsSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: r.ExcludeNamespaces,
		}}
	}
	all := admissionregistrationv1.AllScopes
	hook := func(name string, ops []admissionregistrationv1.OperationType, resources []string, objSel *metav1.LabelSelector) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    name,
			ClientConfig:            r.clientConfig(),
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: resources, Scope: &all}}},
			FailurePolicy:           &fp,
			MatchPolicy:             &exact,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       nsSelector,
			ObjectSelector:          objSel,
		}
	}
	managed := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: r.LabelKey, Operator: metav1.LabelSelectorOpExists}}}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{"app.kubernetes.io/managed-by": "driftguard"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("objects.driftguard.io", []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}, []string{"*"}, managed),
			hook("scale.driftguard.io", []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, []string{"*/scale"}, &metav1.LabelSelector{}),
		},
	}
}

func (r Registration) clientConfig() admissionregistrationv1.WebhookClientConfig {
	if r.ServiceName != "" {
		path := ValidatePath
		port := r.ServicePort
		return admissionregistrationv1.WebhookClientConfig{CABundle: r.CABundle, Service: &admissionregistrationv1.ServiceReference{
			Namespace: r.ServiceNamespace, Name: r.ServiceName, Path: &path, Port: &port,
		}}
	}
	url := r.URL + ValidatePath
	return admissionregistrationv1.WebhookClientConfig{CABundle: r.CABundle, URL: &url}
}

// Register creates or updates the webhook configuration.
func Register(ctx context.Context, c client.Client, r Registration) error {
	want := r.Configuration()
	var have admissionregistrationv1.ValidatingWebhookConfiguration
	err := c.Get(ctx, client.ObjectKey{Name: r.Name}, &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.Create(ctx, want); err != nil {
			return fmt.Errorf("create ValidatingWebhookConfiguration %s: %w", r.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get ValidatingWebhookConfiguration %s: %w", r.Name, err)
	}
	have.Webhooks = want.Webhooks
	have.Labels = want.Labels
	if err := c.Update(ctx, &have); err != nil {
		return fmt.Errorf("update ValidatingWebhookConfiguration %s: %w", r.Name, err)
	}
	return nil
}

// Unregister deletes the webhook configuration, so that a stopped guard does
// not leave the API server calling nobody.
func Unregister(ctx context.Context, c client.Client, name string) error {
	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete ValidatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
}
