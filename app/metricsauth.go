package app

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Bounds of the metrics endpoint's reviews: answers are kept for a while
// (a scraper comes back every few seconds with the same token), the cache
// is bounded, and so are the reviews asked at once, so that a flood of
// made-up tokens costs the API server little.
const (
	metricsAuthTTL        = time.Minute
	metricsAuthDeniedTTL  = 10 * time.Second
	metricsAuthCacheSize  = 1024
	metricsAuthConcurrent = 4
	metricsAuthTimeout    = 10 * time.Second
)

// metricsAuthFilter serves a request to the metrics endpoint only when its
// bearer token is authenticated by the API server (TokenReview) and that
// identity may get the request's path (SubjectAccessReview, a non-resource
// URL: a ClusterRole with nonResourceURLs ["/metrics"] and verb get).
func metricsAuthFilter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	kube, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	a := &metricsAuth{kube: kube, cache: map[[32]byte]authAnswer{}, slots: make(chan struct{}, metricsAuthConcurrent)}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, why := a.check(r)
			if code != http.StatusOK {
				log.V(1).Info("metrics request refused", "status", code, "reason", why, "remote", r.RemoteAddr)
				http.Error(w, why, code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

type metricsAuth struct {
	kube  kubernetes.Interface
	slots chan struct{}

	mu    sync.Mutex
	cache map[[32]byte]authAnswer // by token, path and verb
}

type authAnswer struct {
	code    int
	why     string
	expires time.Time
}

func (a *metricsAuth) check(r *http.Request) (int, string) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return http.StatusUnauthorized, "metrics: a bearer token is required"
	}
	verb := strings.ToLower(r.Method)
	key := sha256.Sum256([]byte(token + "\x00" + r.URL.Path + "\x00" + verb))
	now := time.Now()
	a.mu.Lock()
	if ans, ok := a.cache[key]; ok && now.Before(ans.expires) {
		a.mu.Unlock()
		return ans.code, ans.why
	}
	a.mu.Unlock()

	select {
	case a.slots <- struct{}{}:
		defer func() { <-a.slots }()
	default:
		return http.StatusTooManyRequests, "metrics: too many authentications at once"
	}
	ctx, cancel := context.WithTimeout(r.Context(), metricsAuthTimeout)
	defer cancel()
	code, why, err := a.review(ctx, token, r.URL.Path, verb)
	if err != nil {
		return http.StatusInternalServerError, "metrics: " + err.Error() // not cached
	}
	ttl := metricsAuthTTL
	if code != http.StatusOK {
		ttl = metricsAuthDeniedTTL
	}
	a.mu.Lock()
	if len(a.cache) >= metricsAuthCacheSize {
		clear(a.cache)
	}
	a.cache[key] = authAnswer{code: code, why: why, expires: now.Add(ttl)}
	a.mu.Unlock()
	return code, why
}

// review asks the API server who the token is and whether they may verb path.
func (a *metricsAuth) review(ctx context.Context, token, path, verb string) (int, string, error) {
	tr, err := a.kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, "metrics: the token is not authenticated", nil
	}
	u := tr.Status.User
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, fmt.Sprintf("metrics: %s may not %s %s", u.Username, verb, path), nil
	}
	return http.StatusOK, "", nil
}
