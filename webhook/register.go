package webhook

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
	MutatePath   = "/mutate"
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

// MutatingConfiguration builds the MutatingWebhookConfiguration that stamps
// who changed a managed object. It always fails open: a missing stamp only
// makes a drift record name a field manager instead of a person.
func (r Registration) MutatingConfiguration() *admissionregistrationv1.MutatingWebhookConfiguration {
	v := r.Configuration().Webhooks[0]
	ignore := admissionregistrationv1.Ignore
	never := admissionregistrationv1.NeverReinvocationPolicy
	cc := r.clientConfigFor(MutatePath)
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{"app.kubernetes.io/managed-by": "driftguard"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "stamp.driftguard.io", ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       v.Rules[0].Rule,
			}},
			FailurePolicy: &ignore, MatchPolicy: v.MatchPolicy, SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds,
			AdmissionReviewVersions: v.AdmissionReviewVersions, NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector,
			ReinvocationPolicy: &never,
		}},
	}
}

func (r Registration) clientConfig() admissionregistrationv1.WebhookClientConfig {
	return r.clientConfigFor(ValidatePath)
}

func (r Registration) clientConfigFor(path string) admissionregistrationv1.WebhookClientConfig {
	if r.ServiceName != "" {
		port := r.ServicePort
		return admissionregistrationv1.WebhookClientConfig{CABundle: r.CABundle, Service: &admissionregistrationv1.ServiceReference{
			Namespace: r.ServiceNamespace, Name: r.ServiceName, Path: &path, Port: &port,
		}}
	}
	url := r.URL + path
	return admissionregistrationv1.WebhookClientConfig{CABundle: r.CABundle, URL: &url}
}

// Register creates or updates both webhook configurations with server-side
// apply, so re-registering after a restart (with a new CA) replaces them.
func Register(ctx context.Context, c client.Client, r Registration) error {
	for _, obj := range []client.Object{r.Configuration(), r.MutatingConfiguration()} {
		u, err := toUnstructured(obj)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("driftguard"), client.ForceOwnership); err != nil {
			return fmt.Errorf("register %s %s: %w", u.GetKind(), r.Name, err)
		}
	}
	return nil
}

func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
