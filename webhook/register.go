package webhook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/compiled"
)

// Registration describes how the API server reaches the webhook.
type Registration struct {
	// Name of the ValidatingWebhookConfiguration.
	Name string
	// URL of the webhook server when the guard runs outside the cluster
	// (for example https://127.0.0.1:9443); the paths are appended.
	URL string
	// Service, when set, is used instead of URL: namespace and name of the
	// Service in front of the guard, and its port (443 when zero).
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
	// Resources are the resources of the kinds Git manages (from the
	// snapshots); the webhooks intercept only these. None: no rules.
	Resources []Resource
	// SkipUsers are identities whose requests the API server does not send
	// (a match condition): the guard's own, whose applies and reverts write
	// what Git says, which the webhooks would admit without a record or a
	// stamp after two round trips each.
	SkipUsers []string
	// SkipUserPrefixes leave out every user whose name starts with one of
	// them, as SkipUsers: the service accounts of the guard's namespace,
	// which a Guard's writes impersonate (spec.serviceAccountName).
	SkipUserPrefixes []string
	// DecideInMutating moves the decision of deletes and scale writes to
	// the mutating configuration, which the API server calls before its
	// ValidatingAdmissionPolicies: with the compiled policies in force
	// (--admission-mode=both), the guard then decides, and records, every
	// change while it is up, and the policies deny while it is not.
	DecideInMutating bool
	// Leftover, when set (--admission-mode=compiled, the compiled policies
	// in force), is all the webhooks decide of managed objects besides
	// their creates: the API server's policies decide the rest. It implies
	// DecideInMutating.
	Leftover *Leftover
}

// Leftover is what the compiled admission policies leave to the webhooks:
// the updates (scale writes included) of Users, and every change of
// Objects. Without Objects, Resources stand for them (too many objects to
// name in a match condition: every change of those resources' managed
// objects goes to the webhook).
type Leftover struct {
	Users []string
	// Objects are "resource.group_namespace/name" ("" namespace for a
	// cluster-scoped object).
	Objects   []string
	Resources []Resource
}

// condition is the CEL expression true for a request the compiled policies
// leave to the webhook; ops are the operations the hook sees (deletes
// never go by user).
func (l *Leftover) condition(byUser bool) string {
	var terms []string
	if byUser && len(l.Users) > 0 {
		terms = append(terms, `request.operation == "UPDATE" && request.userInfo.username in `+quoteList(l.Users))
	}
	if len(l.Objects) > 0 {
		terms = append(terms, `request.resource.resource + "." + request.resource.group + "_" + request.namespace + "/" + `+compiled.RequestName+` in `+quoteList(l.Objects))
	}
	if len(l.Resources) > 0 {
		rs := make([]string, len(l.Resources))
		for i, r := range l.Resources {
			rs[i] = r.Resource + "." + r.Group
		}
		terms = append(terms, `request.resource.resource + "." + request.resource.group in `+quoteList(rs))
	}
	if len(terms) == 0 {
		return ""
	}
	return "(" + strings.Join(terms, ") || (") + ")"
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// matchConditions returns the condition that leaves out SkipUsers and
// SkipUserPrefixes.
func (r Registration) matchConditions() []admissionregistrationv1.MatchCondition {
	if len(r.SkipUsers) == 0 && len(r.SkipUserPrefixes) == 0 {
		return nil
	}
	c := notUsers("not-driftguard-itself", r.SkipUsers)
	if len(r.SkipUserPrefixes) > 0 {
		terms := make([]string, 0, len(r.SkipUserPrefixes)+1)
		if len(r.SkipUsers) > 0 {
			terms = append(terms, strings.TrimSuffix(strings.TrimPrefix(c.Expression, "!("), ")"))
		}
		for _, p := range r.SkipUserPrefixes {
			terms = append(terms, "request.userInfo.username.startsWith("+strconv.Quote(p)+")")
		}
		c.Expression = "!(" + strings.Join(terms, " || ") + ")"
	}
	return []admissionregistrationv1.MatchCondition{c}
}

// scalers are the control plane's identities that scale workloads (the HPA;
// the controller manager where controllers share one identity). The default
// policy allows them, so the scale webhook, which cannot select managed
// objects by label (a Scale carries none), never sees them: a guard that is
// down under failurePolicy Fail does not stop autoscaling in the cluster.
var scalers = []string{"system:serviceaccount:kube-system:horizontal-pod-autoscaler", "system:kube-controller-manager"}

func notUsers(name string, users []string) admissionregistrationv1.MatchCondition {
	quoted := make([]string, len(users))
	for i, u := range users {
		quoted[i] = strconv.Quote(u)
	}
	return admissionregistrationv1.MatchCondition{Name: name, Expression: "!(request.userInfo.username in [" + strings.Join(quoted, ", ") + "])"}
}

// podSubresources change a running pod's spec without an update of the pod:
// ephemeral (debug) containers and in-place resize.
var podSubresources = []string{"/ephemeralcontainers", "/resize"}

// Resource is one API resource the webhooks intercept, e.g. apps deployments.
type Resource struct {
	Group    string
	Resource string
}

// rules turns resources into one rule per API group, with each resource
// name given suffix ("" or "/scale").
func rules(resources []Resource, ops []admissionregistrationv1.OperationType, suffix string) []admissionregistrationv1.RuleWithOperations {
	byGroup := map[string][]string{}
	var groups []string
	for _, r := range resources {
		if _, ok := byGroup[r.Group]; !ok {
			groups = append(groups, r.Group)
		}
		if name := r.Resource + suffix; !slices.Contains(byGroup[r.Group], name) {
			byGroup[r.Group] = append(byGroup[r.Group], name)
		}
	}
	sort.Strings(groups)
	all := admissionregistrationv1.AllScopes
	out := make([]admissionregistrationv1.RuleWithOperations, 0, len(groups))
	for _, g := range groups {
		names := byGroup[g]
		sort.Strings(names)
		out = append(out, admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{g}, APIVersions: []string{"*"}, Resources: names, Scope: &all,
		}})
	}
	return out
}

// Paths the webhook server serves.
const (
	ValidatePath = "/validate"
	MutatePath   = "/mutate"
	HealthPath   = "/healthz"
)

// Configuration builds the ValidatingWebhookConfiguration, with rules for
// the managed resources only. It has three webhooks: one for the DELETE of
// managed objects, selected by the inventory label (their CREATE and UPDATE
// go to the mutating webhook, MutatingConfiguration); one for their scale
// subresource, whose requests carry no labels to select on; and one for
// CREATE of objects without the label, for orphan control (an object Git
// manages that is missing, or a new object in a namespace a Guard owns),
// which always fails open so that an unavailable guard never blocks creating
// objects it does not manage.
func (r Registration) Configuration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	fp := r.FailurePolicy
	if fp == "" {
		fp = admissionregistrationv1.Ignore
	}
	ignore := admissionregistrationv1.Ignore
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
	hook := func(name string, rules []admissionregistrationv1.RuleWithOperations, fp *admissionregistrationv1.FailurePolicyType, objSel *metav1.LabelSelector) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:                    name,
			ClientConfig:            r.clientConfig(),
			Rules:                   rules,
			FailurePolicy:           fp,
			MatchPolicy:             &exact,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       nsSelector,
			ObjectSelector:          objSel,
			MatchConditions:         r.matchConditions(),
		}
	}
	managed := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: r.LabelKey, Operator: metav1.LabelSelectorOpExists}}}
	unmanaged := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: r.LabelKey, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	update := []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	scale := hook("scale.driftguard.io", rules(r.Resources, update, "/scale"), &fp, &metav1.LabelSelector{})
	scale.MatchConditions = append(scale.MatchConditions, notUsers("not-the-autoscaler", scalers))
	hooks := []admissionregistrationv1.ValidatingWebhook{
		hook("objects.driftguard.io", rules(r.Resources, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, ""), &fp, managed),
		scale,
		hook("orphans.driftguard.io", rules(r.Resources, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, ""), &ignore, unmanaged),
	}
	if r.DecideInMutating || r.Leftover != nil {
		hooks = hooks[2:] // MutatingConfiguration decides them
	}
	var pods []Resource
	for _, res := range r.Resources {
		if res.Group == "" && res.Resource == "pods" {
			pods = append(pods, res)
		}
	}
	// The request's object is the Pod, which carries the label. Without
	// managed pods the webhook has no rules (and matches nothing).
	var sub []admissionregistrationv1.RuleWithOperations
	for _, suffix := range podSubresources {
		sub = append(sub, rules(pods, update, suffix)...)
	}
	hooks = append(hooks, hook("subresources.driftguard.io", sub, &fp, managed))
	// An eviction deletes a pod with no DELETE admission of its own; its
	// object is an Eviction, which carries no labels to select on, so the
	// hook sees every eviction of a pod and the webhook looks the pod up.
	// The compiled policies do not decide evictions: the webhook does, in
	// every mode. It fails open, as the orphans' hook does: under Fail, a
	// guard that is down would stop every eviction (a node's drain) of pods
	// it does not manage; self-heal recreates a managed pod evicted then.
	evictions := rules(pods, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, "/eviction")
	hooks = append(hooks, hook("evictions.driftguard.io", evictions, &ignore, &metav1.LabelSelector{}))
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{managedByLabel: FieldManager}},
		Webhooks:   hooks,
	}
}

// MutatingConfiguration builds the MutatingWebhookConfiguration whose one
// webhook decides the CREATE and UPDATE of managed objects (selected by the
// inventory label, old object or new, so an edit that removes the label is
// still seen) and stamps who made an admitted change (Stamper): one call to
// the guard per change, where a validating webhook besides would make two.
// It has the configured failure policy, and is called again when a later
// mutating webhook changes the object, so that the decision is about the
// object as it will be stored.
func (r Registration) MutatingConfiguration() *admissionregistrationv1.MutatingWebhookConfiguration {
	all := r
	all.DecideInMutating, all.Leftover = false, nil
	vs := all.Configuration().Webhooks
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	never := admissionregistrationv1.NeverReinvocationPolicy
	mutating := func(name string, v admissionregistrationv1.ValidatingWebhook, rules []admissionregistrationv1.RuleWithOperations, reinvoke *admissionregistrationv1.ReinvocationPolicyType) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name: name, ClientConfig: r.clientConfigFor(MutatePath), Rules: rules,
			FailurePolicy: v.FailurePolicy, MatchPolicy: v.MatchPolicy, SideEffects: v.SideEffects, TimeoutSeconds: v.TimeoutSeconds,
			AdmissionReviewVersions: v.AdmissionReviewVersions, NamespaceSelector: v.NamespaceSelector, ObjectSelector: v.ObjectSelector,
			MatchConditions: v.MatchConditions, ReinvocationPolicy: reinvoke,
		}
	}
	hooks := []admissionregistrationv1.MutatingWebhook{
		mutating(vs[0].Name, vs[0], rules(r.Resources, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, ""), &ifNeeded),
	}
	switch {
	case r.Leftover != nil:
		// Creates, and what the compiled policies leave; a hook with
		// nothing left is not registered.
		only := func(h admissionregistrationv1.MutatingWebhook, expr string) []admissionregistrationv1.MutatingWebhook {
			if expr == "" {
				return nil
			}
			h.MatchConditions = append(slices.Clone(h.MatchConditions), admissionregistrationv1.MatchCondition{Name: "left-by-the-compiled-policies", Expression: expr})
			return []admissionregistrationv1.MutatingWebhook{h}
		}
		creates := `request.operation == "CREATE"`
		if c := r.Leftover.condition(true); c != "" {
			creates += " || " + c
		}
		hooks = only(hooks[0], creates)
		hooks = append(hooks, only(mutating("deletes.driftguard.io", vs[0], vs[0].Rules, &never), r.Leftover.condition(false))...)
		hooks = append(hooks, only(mutating(vs[1].Name, vs[1], vs[1].Rules, &never), r.Leftover.condition(true))...)
	case r.DecideInMutating:
		hooks = append(hooks,
			mutating("deletes.driftguard.io", vs[0], vs[0].Rules, &never),
			mutating(vs[1].Name, vs[1], vs[1].Rules, &never))
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{managedByLabel: FieldManager}},
		Webhooks:   hooks,
	}
}

func (r Registration) clientConfig() admissionregistrationv1.WebhookClientConfig {
	return r.clientConfigFor(ValidatePath)
}

func (r Registration) clientConfigFor(path string) admissionregistrationv1.WebhookClientConfig {
	if r.ServiceName != "" {
		port := r.ServicePort
		if port == 0 {
			port = 443 // the API server's default
		}
		return admissionregistrationv1.WebhookClientConfig{CABundle: r.CABundle, Service: &admissionregistrationv1.ServiceReference{
			Namespace: r.ServiceNamespace, Name: r.ServiceName, Path: &path, Port: &port,
		}}
	}
	url := r.URL + path
	return admissionregistrationv1.WebhookClientConfig{CABundle: r.CABundle, URL: &url}
}

// FieldManager is the field manager of the guard's writes to its webhook
// configurations.
const FieldManager = "driftguard"

// Register makes both live webhook configurations equal to r's: it creates
// a missing one, and replaces the webhooks of one that differs with an
// update. An update owns only the fields it changes, so a configuration a
// Helm chart installed keeps Helm as the owner of the fields both agree on,
// and a later helm upgrade does not conflict. It reports whether it wrote.
func Register(ctx context.Context, c client.Client, r Registration) (bool, error) {
	written, err := register(ctx, c, r, nil)
	return len(written) > 0, err
}

// written is one configuration Register wrote: live is what it replaced,
// nil when it created the object.
type written struct {
	live, want client.Object
}

// errNotRecreated: a configuration is missing and mayCreate said to leave
// it so.
var errNotRecreated = errors.New("webhook configuration missing; not created again")

func register(ctx context.Context, c client.Client, r Registration, mayCreate func() bool) ([]written, error) {
	var out []written
	v, err := ensure(ctx, c, r.Configuration(), mayCreate, func(live, want *admissionregistrationv1.ValidatingWebhookConfiguration) bool {
		if apiequality.Semantic.DeepEqual(live.Webhooks, want.Webhooks) {
			return false
		}
		live.Webhooks = want.Webhooks
		return true
	})
	if v != nil {
		out = append(out, *v)
	}
	if err != nil {
		return out, err
	}
	m, err := ensure(ctx, c, r.MutatingConfiguration(), mayCreate, func(live, want *admissionregistrationv1.MutatingWebhookConfiguration) bool {
		if apiequality.Semantic.DeepEqual(live.Webhooks, want.Webhooks) {
			return false
		}
		live.Webhooks = want.Webhooks
		return true
	})
	if m != nil {
		out = append(out, *m)
	}
	return out, err
}

// ensure creates want (when mayCreate, if set, says so), or updates the
// live object when set (which copies want's webhooks into live) reports a
// difference; it retries when another writer got there first. It returns
// what it wrote, nil when nothing.
func ensure[T client.Object](ctx context.Context, c client.Client, want T, mayCreate func() bool, set func(live, want T) bool) (*written, error) {
	kind := kindOf(want)
	var err error
	for range 5 {
		live := want.DeepCopyObject().(T)
		if err = c.Get(ctx, client.ObjectKeyFromObject(want), live); apierrors.IsNotFound(err) {
			if mayCreate != nil && !mayCreate() {
				return nil, errNotRecreated
			}
			err = c.Create(ctx, want.DeepCopyObject().(T), client.FieldOwner(FieldManager))
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("register %s %s: %w", kind, want.GetName(), err)
			}
			return &written{want: want}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("register %s %s: read: %w", kind, want.GetName(), err)
		}
		before := live.DeepCopyObject().(T)
		if !set(live, want) {
			return nil, nil
		}
		if _, ok := live.GetLabels()[managedByLabel]; !ok {
			labels := live.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[managedByLabel] = FieldManager
			live.SetLabels(labels)
		}
		err = c.Update(ctx, live, client.FieldOwner(FieldManager))
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("register %s %s: %w", kind, want.GetName(), err)
		}
		return &written{live: before, want: want}, nil
	}
	return nil, fmt.Errorf("register %s %s: gave up after 5 conflicting writes: %w", kind, want.GetName(), err)
}

// kindOf names the kind of a webhook configuration.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return "ValidatingWebhookConfiguration"
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return "MutatingWebhookConfiguration"
	}
	k := fmt.Sprintf("%T", obj)
	return k[strings.LastIndex(k, ".")+1:]
}

const managedByLabel = "app.kubernetes.io/managed-by"

func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
