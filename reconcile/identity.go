package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

// Where a Guard's service account comes from, as Identity.Field names it.
const (
	FieldServiceAccountName   = "spec.serviceAccountName"
	FlagDefaultServiceAccount = "--default-service-account"
	serviceAccountUserPrefix  = "system:serviceaccount:"
)

// serviceAccountTimeout bounds the look-up of a Guard's service account.
const serviceAccountTimeout = 10 * time.Second

// ServiceAccountUser is the user name the API server gives service account
// name of namespace ns.
func ServiceAccountUser(ns, name string) string {
	return serviceAccountUserPrefix + ns + ":" + name
}

// ServiceAccountPrefix is the prefix of the user names of every service
// account of namespace ns.
func ServiceAccountPrefix(ns string) string {
	return serviceAccountUserPrefix + ns + ":"
}

// Identity is whom one Guard's writes act as.
type Identity struct {
	// User is the impersonated user; empty for the guard's own identity.
	User string
	// Namespace and Name of the service account (empty for the guard's own).
	Namespace, Name string
	// Field is where the service account was named: spec.serviceAccountName
	// or --default-service-account.
	Field string
	// Client writes as User (the guard's own client when User is empty).
	Client client.Client
}

// String names the identity for conditions and errors.
func (id Identity) String() string {
	if id.User == "" {
		return "the guard's own identity"
	}
	return fmt.Sprintf("service account %s/%s (%s; user %s)", id.Namespace, id.Name, id.Field, id.User)
}

// IdentityError says why a Guard's service account cannot be used; Reason
// is the condition reason.
type IdentityError struct {
	Guard, Reason, Message string
	Err                    error
}

func (e *IdentityError) Error() string {
	msg := "guard " + e.Guard + ": " + e.Message
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *IdentityError) Unwrap() error { return e.Err }

// Identities decide whom each Guard's writes act as, and keep one client
// per identity. A Guard with a service account (spec.serviceAccountName, or
// Default) writes through a client impersonating
// system:serviceaccount:<Namespace>:<name>, so that what its committers can
// do is what that service account's RBAC allows, not what the guard's own
// allows. The service account is always one of Namespace (the guard's own
// namespace): a Guard names only the account, never its namespace.
type Identities struct {
	// Config is the guard's own; impersonating clients are copies of it.
	Config *rest.Config
	// Scheme and Mapper are shared by every client (a reset of the mapper
	// after new CRDs is seen by all).
	Scheme *runtime.Scheme
	Mapper meta.RESTMapper
	// Own is the guard's own client, for Guards without a service account.
	Own client.Client
	// Namespace is the guard's namespace, where the service accounts are.
	Namespace string
	// Default is --default-service-account: the service account of Guards
	// that name none (empty: the guard's own identity).
	Default string
	// Self is the guard's own user name: a Guard may not name it, which
	// would be no restriction at all.
	Self string
	// Guards reads Guards by name (the manager's cache), for self-heal.
	Guards client.Reader
	// ServiceAccounts reads the service accounts of Namespace (a cache
	// restricted to it); nil skips the check that the account exists.
	ServiceAccounts client.Reader

	once    sync.Once
	limiter flowcontrol.RateLimiter
	mu      sync.Mutex
	clients map[string]client.Client
}

// ServiceAccountOf returns the service account a Guard's writes act as, and
// where it was named; "" for the guard's own identity.
func (ids *Identities) ServiceAccountOf(g *v1alpha1.Guard) (name, field string) {
	if ids == nil {
		return "", ""
	}
	if g.Spec.ServiceAccountName != "" {
		return g.Spec.ServiceAccountName, FieldServiceAccountName
	}
	if ids.Default != "" {
		return ids.Default, FlagDefaultServiceAccount
	}
	return "", ""
}

// For returns the identity a Guard's writes act as. The service account
// must exist in Namespace; an *IdentityError says why it cannot be used.
func (ids *Identities) For(ctx context.Context, g *v1alpha1.Guard) (Identity, error) {
	name, field := ids.ServiceAccountOf(g)
	if name == "" {
		return Identity{Client: ids.own()}, nil
	}
	id := Identity{User: ServiceAccountUser(ids.Namespace, name), Namespace: ids.Namespace, Name: name, Field: field}
	if id.User == ids.Self {
		return Identity{}, &IdentityError{Guard: g.Name, Reason: v1alpha1.ReasonInvalidServiceAccount,
			Message: fmt.Sprintf("%s %q is the guard's own service account (%s): a Guard acts as its own, narrower service account", field, name, id.User)}
	}
	if ids.ServiceAccounts != nil {
		var sa corev1.ServiceAccount
		// Bounded: a cache whose first list is refused (no RBAC to list
		// service accounts) would wait for ever.
		getCtx, cancel := context.WithTimeout(ctx, serviceAccountTimeout)
		err := ids.ServiceAccounts.Get(getCtx, client.ObjectKey{Namespace: ids.Namespace, Name: name}, &sa)
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			return Identity{}, &IdentityError{Guard: g.Name, Reason: v1alpha1.ReasonServiceAccountNotFound,
				Message: fmt.Sprintf("%s: service account %s/%s does not exist: create it (with a RoleBinding in each namespace the Guard deploys to) or name another; nothing is applied meanwhile", field, ids.Namespace, name)}
		case err != nil:
			return Identity{}, &IdentityError{Guard: g.Name, Reason: v1alpha1.ReasonServiceAccountNotFound,
				Message: fmt.Sprintf("%s: read service account %s/%s (the guard needs get, list and watch on serviceaccounts in %s)", field, ids.Namespace, name, ids.Namespace), Err: err}
		}
	}
	c, err := ids.client(id.User)
	if err != nil {
		return Identity{}, &IdentityError{Guard: g.Name, Reason: v1alpha1.ReasonInvalidServiceAccount, Message: "client impersonating " + id.User, Err: err}
	}
	id.Client = c
	return id, nil
}

// ForGuard is For of the Guard named guard, read from Guards.
func (ids *Identities) ForGuard(ctx context.Context, guard string) (Identity, error) {
	var g v1alpha1.Guard
	// Read-only, on self-heal's path: no copy of the cached Guard.
	if err := ids.Guards.Get(ctx, client.ObjectKey{Name: guard}, &g, client.UnsafeDisableDeepCopy); err != nil {
		return Identity{}, fmt.Errorf("guard %s: find the identity it acts as: %w", guard, err)
	}
	return ids.For(ctx, &g)
}

func (ids *Identities) own() client.Client {
	if ids == nil {
		return nil
	}
	return ids.Own
}

// client returns the one client impersonating user, made the first time.
// Every impersonating client shares one rate limiter with the guard's
// --kube-api-qps and --kube-api-burst, so that many identities do not
// multiply the guard's share of the API server.
func (ids *Identities) client(user string) (client.Client, error) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if c, ok := ids.clients[user]; ok {
		return c, nil
	}
	ids.once.Do(func() {
		if ids.Config.RateLimiter != nil {
			ids.limiter = ids.Config.RateLimiter
		} else if ids.Config.QPS > 0 {
			ids.limiter = flowcontrol.NewTokenBucketRateLimiter(ids.Config.QPS, max(ids.Config.Burst, 1))
		}
	})
	cfg := rest.CopyConfig(ids.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.RateLimiter = ids.limiter
	c, err := client.New(cfg, client.Options{Scheme: ids.Scheme, Mapper: ids.Mapper})
	if err != nil {
		return nil, err
	}
	if ids.clients == nil {
		ids.clients = map[string]client.Client{}
	}
	ids.clients[user] = c
	return c, nil
}

// ForbiddenError is the API server's "forbidden" for a write a Guard made
// as its service account.
type ForbiddenError struct {
	Identity  Identity
	Verb      string
	Resource  string // e.g. "deployments.apps"
	Namespace string // empty for cluster-scoped objects
	// RBAC is true when the authorizer refused it (not an admission
	// webhook or policy, which answer "forbidden" too).
	RBAC bool
	Err  error
}

func (e *ForbiddenError) Error() string {
	where, fix := "cluster-wide", "grant it to that service account with a ClusterRole and ClusterRoleBinding, or leave the object out of Git"
	switch {
	case !e.RBAC:
		if e.Namespace != "" {
			where = "in namespace " + e.Namespace
		}
		fix = "an admission check refused it, not RBAC"
	case e.Namespace != "" && e.Namespace == e.Identity.Namespace:
		where, fix = "in namespace "+e.Namespace, "that is the guard's own namespace, where no Guard's service account should write: leave the object out of Git"
	case e.Namespace != "":
		where, fix = "in namespace "+e.Namespace, "grant it to that service account with a Role and RoleBinding in "+e.Namespace+", or leave the object out of Git"
	}
	return fmt.Sprintf("%s may not %s %s %s: %s: %v", e.Identity, e.Verb, e.Resource, where, fix, e.Err)
}

func (e *ForbiddenError) Unwrap() error { return e.Err }

// forbidden explains the API server's "forbidden" for a write of verb to an
// object of gvk in namespace: as a ForbiddenError naming the service
// account when the Applier impersonates one, else as explainForbidden.
func (a *Applier) forbidden(err error, verb string, gvk schema.GroupVersionKind, namespace string) error {
	if !apierrors.IsForbidden(err) {
		return err
	}
	if a.identity.User == "" {
		return explainForbidden(err, gvk)
	}
	resource := ""
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		resource = status.Status().Details.Kind
	}
	if resource == "" {
		resource = "objects of kind " + gvk.Kind
	}
	if gvk.Group != "" {
		resource += "." + gvk.Group
	}
	// The authorizer's refusal reads `User "…" cannot <verb> resource …`;
	// admission's names its webhook or policy.
	rbac := strings.Contains(err.Error(), `" cannot `)
	return &ForbiddenError{Identity: a.identity, Verb: verb, Resource: resource, Namespace: namespace, RBAC: rbac, Err: err}
}

// As returns the Applier acting as id: its writes (apply, dry runs, prune,
// replace, namespaces, annotations) go through id's client; its reads of
// lists (prune) and definitions stay the guard's own (Reader).
func (a *Applier) As(id Identity) *Applier {
	if id.Client == nil {
		return a
	}
	c := *a
	c.Client = id.Client
	c.identity = id
	return &c
}

// ForGuard returns the Applier acting as the Guard's identity (itself
// without Identities).
func (a *Applier) ForGuard(ctx context.Context, guard string) (*Applier, error) {
	if a.Identities == nil {
		return a, nil
	}
	id, err := a.Identities.ForGuard(ctx, guard)
	if err != nil {
		return nil, err
	}
	return a.As(id), nil
}
