package compiled

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API server reads the index through a cache of ConfigMaps that it
// stops for good (until kube-apiserver restarts) once no binding of a
// policy with a ConfigMap parameter is left for one of its policy
// refreshes, a second (kubernetes/kubernetes#130887): from then on every
// policy reads each index as it was, and a Git change that reaches the
// index is not in force. The canary is such a policy and binding, kept
// while the guard is installed (in mode webhook too), so that the guard's
// own removals never stop that cache; and its parameter, a ConfigMap
// holding a digest of every index written, tells the keeper whether the
// API server reads what the guard wrote: a server-side dry run of a create
// that the canary refuses with the digest it reads.

// CanaryName names the canary's policy, binding and ConfigMap (in the
// guard's namespace).
func (c Config) CanaryName() string { return c.Name + "-canary" }

// canaryProbeName is the ConfigMap the canary policy refuses to create in
// the guard's namespace.
func (c Config) canaryProbeName() string { return c.Name + "-canary-probe" }

const (
	canaryKey     = "token"
	canaryMessage = "driftguard canary reads: "
	// canaryWait is how long the API server may take to read a new token:
	// a policy refresh (1 s) and its cache's watch, on a loaded machine.
	canaryWait = 15 * time.Second
)

// canaryPolicy refuses the create of canaryProbeName, naming the token its
// parameter holds.
func (c Config) canaryPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := c.CanaryName()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: c.Namespace}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					ResourceNames: []string{c.canaryProbeName()},
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}}},
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "false",
				MessageExpression: fmt.Sprintf(`%s + params.?data.orValue({})[?%s].orValue("")`, lit(canaryMessage), lit(canaryKey)),
			}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ParamRef:          &admissionregistrationv1.ParamRef{Name: name, Namespace: c.Namespace, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return p, b
}

// canaryConfigMap is the canary's parameter, holding the digest of the
// index ConfigMaps among objects (digests: of each object).
func (c Config) canaryConfigMap(objects []client.Object, digests []string) *corev1.ConfigMap {
	h := sha256.New()
	for i, o := range objects {
		if _, ok := o.(*corev1.ConfigMap); ok {
			h.Write([]byte(digests[i]))
		}
	}
	l := c.labels()
	l[IndexLabel] = c.Name
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: c.CanaryName(), Namespace: c.Namespace, Labels: l},
		Data:       map[string]string{canaryKey: hex.EncodeToString(h.Sum(nil)[:12])},
	}
}

// isCanary reports whether o is one of the canary's objects.
func (c Config) isCanary(o client.Object) bool {
	return o.GetName() == c.CanaryName() && (o.GetNamespace() == "" || o.GetNamespace() == c.Namespace)
}

// readCanary returns the token the API server reads, or "" while it does
// not enforce the canary policy yet.
func (k *Keeper) readCanary(ctx context.Context) (string, error) {
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: k.Config.canaryProbeName(), Namespace: k.Config.Namespace}}
	err := k.Client.Create(ctx, probe, client.DryRunAll)
	if err == nil {
		return "", nil
	}
	_, token, ok := strings.Cut(err.Error(), canaryMessage)
	if !ok {
		return "", fmt.Errorf("read the compiled policies' canary: %w", err)
	}
	return strings.TrimSpace(token), nil
}

// confirmCanary waits until the API server reads token.
func (k *Keeper) confirmCanary(ctx context.Context, token string) error {
	deadline := time.Now().Add(canaryWait)
	for {
		got, err := k.readCanary(ctx)
		switch {
		case err == nil && got == token:
			return nil
		case time.Now().After(deadline) && err == nil && got != "":
			return fmt.Errorf("the API server still reads an old compiled index %s after it was written (canary %s, written %s): its cache of ConfigMap parameters has stopped, a Kubernetes bug (kubernetes/kubernetes#130887) that only a restart of kube-apiserver ends; until then the webhook decides every change", canaryWait, got, token)
		case time.Now().After(deadline):
			return fmt.Errorf("the compiled policies' canary is not in force %s after it was written: %v", canaryWait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
