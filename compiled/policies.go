package compiled

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/apply"
)

// Resource is a resource the snapshots hold objects of, in one mode: a
// resource with objects in both modes is listed twice, and once more with
// no mode (every resource of a managed object is, for the stamp policy).
// Only the policy of a mode some object is in matches a resource: each
// policy the API server evaluates for a request costs it a conversion of
// the object and the index (docs/performance.md).
type Resource struct {
	Group, Resource string
	Namespaced      bool
	// Mode is the index mode (deny, warn) of some of its objects; "" for
	// the entry of every managed resource.
	Mode string
}

// Config is what the compiled policies are made of besides the index.
type Config struct {
	// Name prefixes every generated object (the webhook configuration's
	// name, unique per installation and shard).
	Name string
	// Namespace is the guard's own; the index of cluster-scoped objects
	// lives there.
	Namespace string
	// GuardUsers are the guard's identities (the default policy's
	// guard-identity rule).
	GuardUsers []string
	// GuardUserPrefixes leave out every user whose name starts with one of
	// them (the service accounts of the guard's namespace, which Guards'
	// writes impersonate), as the webhooks do.
	GuardUserPrefixes []string
	// BreakGlassGroups may change a managed object with a reason in the
	// driftguard.io/break-glass annotation.
	BreakGlassGroups []string
	// ExcludeNamespaces are never matched (as for the webhooks).
	ExcludeNamespaces []string
	Resources         []Resource
	// Shapes are the shapes the index uses.
	Shapes []Shape
}

// The default policy's system identities (policy/default/decision.rego):
// control-plane components may update and scale, and of them only the
// namespace controller (or the controller manager, where controllers share
// its identity) deletes.
var (
	systemUsers       = []string{"system:kube-controller-manager", "system:kube-scheduler", "system:apiserver"}
	systemPrefixes    = []string{"system:serviceaccount:kube-system:", "system:node:"}
	deleteControllers = []string{"system:serviceaccount:kube-system:namespace-controller", "system:kube-controller-manager"}
)

// Labels on every generated object.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	CompiledLabel  = "driftguard.io/compiled"
	// IndexLabel marks the index ConfigMaps (value: Config.Name).
	IndexLabel = "driftguard.io/compiled-index"
)

func (c Config) labels() map[string]string {
	return map[string]string{ManagedByLabel: "driftguard", CompiledLabel: c.Name}
}

// IndexName is the index ConfigMap of namespaced objects, one per namespace.
func (c Config) IndexName() string { return c.Name + "-index" }

// ClusterIndexName is the index of cluster-scoped objects, in Namespace.
func (c Config) ClusterIndexName() string { return c.Name + "-index-cluster" }

// policyKind is one of the generated policies: which writes it matches and
// what it does with those it refuses.
type policyKind struct {
	suffix  string
	mode    string // the index mode it enforces
	action  admissionregistrationv1.ValidationAction
	cluster bool // cluster-scoped resources (index in Namespace)
	scale   bool // the scale subresource
}

var kinds = []policyKind{
	{suffix: "deny", mode: "deny", action: admissionregistrationv1.Deny},
	{suffix: "deny-cluster", mode: "deny", action: admissionregistrationv1.Deny, cluster: true},
	{suffix: "deny-scale", mode: "deny", action: admissionregistrationv1.Deny, scale: true},
	{suffix: "deny-cluster-scale", mode: "deny", action: admissionregistrationv1.Deny, cluster: true, scale: true},
	{suffix: "warn", mode: "warn", action: admissionregistrationv1.Warn},
	{suffix: "warn-cluster", mode: "warn", action: admissionregistrationv1.Warn, cluster: true},
	{suffix: "warn-scale", mode: "warn", action: admissionregistrationv1.Warn, scale: true},
	{suffix: "warn-cluster-scale", mode: "warn", action: admissionregistrationv1.Warn, cluster: true, scale: true},
}

// Policies returns the policies and bindings for c, in a stable order.
func (c Config) Policies() ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, k := range kinds {
		rules := c.rules(k)
		if len(rules) == 0 {
			continue
		}
		p, b := c.policy(k, rules)
		ps, bs = append(ps, p), append(bs, b)
	}
	p, b := c.indexPolicy()
	cp, cb := c.canaryPolicy()
	return append(ps, p, cp), append(bs, b, cb)
}

func (c Config) rules(k policyKind) []admissionregistrationv1.NamedRuleWithOperations {
	byGroup := map[string][]string{}
	for _, r := range c.Resources {
		if r.Namespaced == k.cluster || r.Mode != k.mode {
			continue
		}
		res := r.Resource
		if k.scale {
			res += "/scale"
		}
		if !slices.Contains(byGroup[r.Group], res) {
			byGroup[r.Group] = append(byGroup[r.Group], res)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Update, admissionregistrationv1.Delete}
	if k.scale {
		ops = ops[:1]
	}
	var out []admissionregistrationv1.NamedRuleWithOperations
	for _, g := range groups {
		res := byGroup[g]
		slices.Sort(res)
		out = append(out, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{g}, APIVersions: []string{"*"}, Resources: res},
		}})
	}
	return out
}

func (c Config) policy(k policyKind, rules []admissionregistrationv1.NamedRuleWithOperations) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := c.Name + "-" + k.suffix
	match := &admissionregistrationv1.MatchResources{ResourceRules: rules, MatchPolicy: ptr.To(admissionregistrationv1.Equivalent)}
	if !k.scale {
		// A Scale has no labels: the index alone says what is managed.
		match.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: apply.GuardLabel, Operator: metav1.LabelSelectorOpExists}}}
	}
	vars, allowed, refused, changed := c.validation(k)
	// The validation's messageExpression is evaluated on every request the
	// policy gets past its match conditions, admitted ones included, in an
	// activation of its own (the API server converts the index again for
	// it): a match condition true exactly when the validation refuses
	// leaves an admitted request one activation, not two.
	allowed = c.exempt() + " || " + allowed
	refused = "!(" + c.exempt() + ") && " + refused
	verb := denyVerb // ParseDenial reads the message back
	if k.mode == "warn" {
		verb = warnVerb
	}
	message := fmt.Sprintf(`"changes to objects managed by Git %s: " + request.resource.resource + "/" + `+RequestName+` + " comes from " + variables.source + " in " + variables.git[1] + " at revision " + variables.git[0] + " (Guard " + variables.guard + "); change it there" + %s`, verb, changed)
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: match,
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
			MatchConditions:  []admissionregistrationv1.MatchCondition{{Name: "refused", Expression: refused}},
			Variables:        vars,
			Validations: []admissionregistrationv1.Validation{{
				Expression:        allowed,
				MessageExpression: message,
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	return p, c.binding(k, name)
}

// validation is the variables of a policy of kind k, the expression that
// allows a request, the same decision's negation without variables (a
// match condition has none: the values it needs are bound by one-element
// comprehensions, [value].all(name, ...)), and the expression that says
// what the request changed, for the message.
func (c Config) validation(k policyKind) (vars []admissionregistrationv1.Variable, allowed, refused, changed string) {
	unchangedExpr := byShape(c.Shapes, unchanged)
	if k.scale {
		unchangedExpr = byShape(c.Shapes, scaleUnchanged)
	}
	deferredExpr := byShape(c.Shapes, deferred)
	// The object's entry, from its bucket (pack.go): split, not indexOf and
	// substring, which copy the bucket into runes.
	bucket := `params.?data.orValue({})[?(request.resource.resource + "." + request.resource.group + "_" + ` + bucketExpr + `)].orValue("")`
	parts := func(bucket string) string { return bucket + `.split("\n" + ` + RequestName + ` + "=", 2)` }
	entry := func(parts string) string {
		return `(size(` + parts + `) < 2 ? "" : ` + parts + `[1].split("\n", 2)[0])`
	}
	vars = []admissionregistrationv1.Variable{
		{Name: "bucket", Expression: bucket},
		{Name: "parts", Expression: parts("variables.bucket")},
		{Name: "entry", Expression: entry("variables.parts")},
		{Name: "fields", Expression: `variables.entry.split("|")`},
		{Name: "mode", Expression: `size(variables.fields) == 4 ? variables.fields[0] : ""`},
		{Name: "shape", Expression: `variables.fields[1]`},
		{Name: "guard", Expression: `variables.fields[2]`},
		{Name: "source", Expression: `variables.fields[3]`},
		{Name: "git", Expression: `params.?data.orValue({})[?("guard." + variables.guard)].orValue("|").split("|")`},
		{Name: "deferred", Expression: deferredExpr},
	}
	// In the match condition: dgP the parts, dgF the entry's fields, dgNA
	// and dgOA the annotations; a value read once is not bound (each
	// binding is a comprehension of its own).
	inline := strings.NewReplacer("variables.shape", "dgF[1]",
		"variables.newLabels", "object.metadata.?labels.orValue({})", "variables.oldLabels", "oldObject.metadata.?labels.orValue({})",
		"variables.newAnnotations", "dgNA", "variables.oldAnnotations", "dgOA")
	inMode := func(body string) string {
		return fmt.Sprintf(`[%s].all(dgP, [%s.split("|")].all(dgF, size(dgF) == 4 && dgF[0] == %s && !(%s) && %s))`,
			parts(bucket), entry("dgP"), lit(k.mode), inline.Replace(deferredExpr), body)
	}
	allowed = `variables.mode != "` + k.mode + `" || variables.deferred || request.operation == "UPDATE" && variables.unchanged`
	if k.scale {
		vars = append(vars, admissionregistrationv1.Variable{Name: "unchanged", Expression: unchangedExpr})
		refused = inMode(`!(request.operation == "UPDATE" && (` + inline.Replace(unchangedExpr) + `))`)
		changed = `" (scale " + string(oldObject.?spec.?replicas.orValue(0)) + " to " + string(object.?spec.?replicas.orValue(0)) + ")"`
		return vars, allowed, refused, changed
	}
	// The annotation first: it is absent from almost every update, and
	// reading it costs less than a pass over the writer's groups.
	breakGlass := fmt.Sprintf(
		`request.operation == "UPDATE" && variables.newAnnotations[?%s].orValue("").trim() != "" && request.userInfo.?groups.orValue([]).exists(g, g in %s)`,
		lit(v1alpha1.BreakGlassAnnotation), list(c.BreakGlassGroups))
	vars = append(vars,
		admissionregistrationv1.Variable{Name: "newLabels", Expression: `object.metadata.?labels.orValue({})`},
		admissionregistrationv1.Variable{Name: "oldLabels", Expression: `oldObject.metadata.?labels.orValue({})`},
		admissionregistrationv1.Variable{Name: "newAnnotations", Expression: `object.metadata.?annotations.orValue({})`},
		admissionregistrationv1.Variable{Name: "oldAnnotations", Expression: `oldObject.metadata.?annotations.orValue({})`},
		admissionregistrationv1.Variable{Name: "breakGlass", Expression: breakGlass},
		admissionregistrationv1.Variable{Name: "unchanged", Expression: unchangedExpr},
	)
	allowed = `variables.mode != "` + k.mode + `" || variables.deferred || variables.breakGlass || request.operation == "UPDATE" && variables.unchanged`
	// A delete has no object: break-glass and unchanged are of updates.
	// Unchanged first: it admits most updates that get this far (an
	// ignored field), and break-glass is then not read.
	refused = inMode(fmt.Sprintf(`(request.operation != "UPDATE" || `+
		`[object.metadata.?annotations.orValue({})].all(dgNA, [oldObject.metadata.?annotations.orValue({})].all(dgOA, !(%s) && !(%s))))`,
		inline.Replace(unchangedExpr), inline.Replace(breakGlass)))
	changed = fmt.Sprintf(`(request.operation == "DELETE" ? " (delete)" : " (changed: " + (object.filter(k, !(k in %[1]s) && (!(k in oldObject) || object[k] != oldObject[k])) + oldObject.filter(k, !(k in %[1]s) && !(k in object)) + (variables.newLabels != variables.oldLabels ? ["metadata.labels"] : []) + (variables.newAnnotations != variables.oldAnnotations ? ["metadata.annotations"] : []) + (object.metadata.?ownerReferences.orValue([]) != oldObject.metadata.?ownerReferences.orValue([]) ? ["metadata.ownerReferences"] : []) + (object.metadata.?finalizers.orValue([]) != oldObject.metadata.?finalizers.orValue([]) ? ["metadata.finalizers"] : [])).join(", ") + ")")`, list(topLevel))
	return vars, allowed, refused, changed
}

// binding binds the policy called name to the index of its scope.
func (c Config) binding(k policyKind, name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	ref := &admissionregistrationv1.ParamRef{Name: c.IndexName(), ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	if k.cluster {
		ref.Name, ref.Namespace = c.ClusterIndexName(), c.Namespace
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name,
			ParamRef:   ref,
			// Audit: the API server's audit log records each refusal with
			// its message, also while the guard is down.
			ValidationActions: []admissionregistrationv1.ValidationAction{k.action, admissionregistrationv1.Audit},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: c.namespaceSelector()},
		},
	}
}

// exempt is true for the writers the default policy always allows: the
// guard, and the control plane (which updates and scales; of it only the
// namespace controller and the controller manager delete).
func (c Config) exempt() string {
	prefixes := make([]string, len(systemPrefixes))
	for i, p := range systemPrefixes {
		prefixes[i] = fmt.Sprintf("(request.userInfo.username.startsWith(%s) && size(request.userInfo.username) > %d)", lit(p), len(p))
	}
	return fmt.Sprintf(`%s || (request.operation == "DELETE" ? request.userInfo.username in %s : (request.userInfo.username in %s || %s))`,
		c.guardUser(), list(deleteControllers), list(systemUsers), strings.Join(prefixes, " || "))
}

// guardUser is true for the guard's identities.
func (c Config) guardUser() string {
	expr := "request.userInfo.username in " + list(c.GuardUsers)
	for _, p := range c.GuardUserPrefixes {
		expr += " || request.userInfo.username.startsWith(" + lit(p) + ")"
	}
	return "(" + expr + ")"
}

func (c Config) notTheGuard() admissionregistrationv1.MatchCondition {
	return admissionregistrationv1.MatchCondition{Name: "not-the-guard", Expression: "!" + c.guardUser()}
}

func (c Config) namespaceSelector() *metav1.LabelSelector {
	if len(c.ExcludeNamespaces) == 0 {
		return &metav1.LabelSelector{}
	}
	ns := slices.Sorted(slices.Values(c.ExcludeNamespaces))
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: ns,
	}}}
}

// indexPolicy keeps the index ConfigMaps the guard's: in a namespace a
// tenant edits, the index is theirs to edit too, were it not for this. It
// matches by name, which the policies' parameter references use, creates
// included: a tenant cannot make the index of a namespace before the guard
// does, and what the guard did not write is never read as the index. A
// delete of a collection of ConfigMaps reaches admission with no name
// (RequestName): a second rule matches every ConfigMap delete, and the
// match condition keeps those of the guard's names. Only the guard's own
// identities write the index: not the Guards' service accounts of its
// namespace, which apply what a tenant's Git holds (a ConfigMap of the
// index's name would empty the index of a namespace other Guards share).
func (c Config) indexPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := c.Name + "-index"
	configMaps := admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}
	names := []string{c.IndexName(), c.ClusterIndexName(), c.CanaryName()}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					ResourceNames: names,
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
						Rule:       configMaps,
					},
				}, {
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
						Rule:       configMaps,
					},
				}},
			},
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "the-guards-names", Expression: RequestName + " in " + list(names)},
				{Name: "not-the-guard", Expression: "!(request.userInfo.username in " + list(c.GuardUsers) + ")"},
				{Name: "not-the-namespace-controller", Expression: `!(request.operation == "DELETE" && request.userInfo.username in ` + list(deleteControllers) + ")"},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "false",
				Message:    "this ConfigMap is driftguard's index of the objects Git manages in this namespace, which the API server's admission policies read; only the guard writes it",
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.labels()},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return p, b
}
