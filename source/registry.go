package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// registryClient is a puller of one registry with one set of credentials.
// It keeps the registry's auth handshake (the /v2/ ping, a token) between
// fetches, so that asking for a manifest again costs one request.
type registryClient struct {
	key    string // credentials and insecure, hashed
	puller *remote.Puller
}

// puller returns the puller of st for a, made again when the credentials
// or insecure changed.
func (f *Fetcher) puller(rc **registryClient, registry string, a *ArtifactSource) (*remote.Puller, error) {
	key := credentialsKey(a)
	if *rc != nil && (*rc).key == key {
		return (*rc).puller, nil
	}
	auth, err := registryAuth(registry, a.Credentials)
	if err != nil {
		return nil, err
	}
	p, err := remote.NewPuller(registryOptions(f.http, remote.WithAuth(auth), a)...)
	if err != nil {
		return nil, err
	}
	*rc = &registryClient{key: key, puller: p}
	return p, nil
}

// registryOptions are the options of every registry request: auth, plain
// HTTP only when a allows it, and few retries (the Guard retries itself).
func registryOptions(rt http.RoundTripper, auth remote.Option, a *ArtifactSource) []remote.Option {
	return []remote.Option{
		auth,
		remote.WithTransport(plainHTTPGuard{next: rt, insecure: a.Insecure, field: a.Field}),
		remote.WithUserAgent("driftguard"),
		remote.WithRetryBackoff(remote.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 2}),
	}
}

// nameOptions are how references of a are parsed: plain HTTP when insecure.
func nameOptions(a *ArtifactSource) []name.Option {
	if a.Insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

// credentialsKey identifies the credentials and transport settings of a
// without revealing them.
func credentialsKey(a *ArtifactSource) string {
	h := sha256.New()
	fmt.Fprintf(h, "%t\x00", a.Insecure)
	if c := a.Credentials; c != nil {
		for _, s := range []string{c.Username, c.Password, c.BearerToken, string(c.DockerConfig), c.AccessKey, c.SecretKey, c.SessionToken} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// registryAuth turns credentials into an authenticator for registry
// (host[:port]); anonymous without credentials.
func registryAuth(registry string, c *Credentials) (authn.Authenticator, error) {
	switch {
	case c == nil:
		return authn.Anonymous, nil
	case c.BearerToken != "":
		return &authn.Bearer{Token: c.BearerToken}, nil
	case c.Username != "":
		return &authn.Basic{Username: c.Username, Password: c.Password}, nil
	case len(c.DockerConfig) > 0:
		var cfg struct {
			Auths map[string]authn.AuthConfig `json:"auths"`
		}
		if err := json.Unmarshal(c.DockerConfig, &cfg); err != nil {
			return nil, fmt.Errorf("%s: key .dockerconfigjson: %w", c.Secret, err)
		}
		for host, ac := range cfg.Auths {
			if dockerConfigHost(host) == registry {
				return authn.FromConfig(ac), nil
			}
		}
		return nil, fmt.Errorf("%s: key .dockerconfigjson has no entry for %s", c.Secret, registry)
	}
	return authn.Anonymous, nil
}

// dockerConfigHost is the registry of a key of .dockerconfigjson, which may
// be a URL ("https://index.docker.io/v1/").
func dockerConfigHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return host
}

// plainHTTPGuard refuses plain HTTP unless the source allows it: the
// registry library falls back to HTTP by itself for loopback and private
// addresses, and a Guard uses HTTP only when spec says insecure.
type plainHTTPGuard struct {
	next     http.RoundTripper
	insecure bool
	field    string
}

func (g plainHTTPGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" && !g.insecure {
		return nil, &plainHTTPError{host: r.URL.Host, field: g.field}
	}
	return g.next.RoundTrip(r)
}

type plainHTTPError struct{ host, field string }

func (e *plainHTTPError) Error() string {
	if e.field == "" {
		return fmt.Sprintf("%s speaks plain HTTP, which is used only when asked: pass --insecure", e.host)
	}
	return fmt.Sprintf("%s speaks plain HTTP, which is used only when asked: set %s.insecure to true", e.host, e.field)
}

// explainRegistry makes an error of the registry library say what to do:
// a refused request names the Secret the credentials came from.
func explainRegistry(err error, a *ArtifactSource) error {
	var pe *plainHTTPError
	if errors.As(err, &pe) {
		return pe // the failed HTTPS attempt before it is noise
	}
	var te *transport.Error
	if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
		return fmt.Errorf("%w; %s", err, credentialsHint(a, "registry"))
	}
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") && !a.Insecure {
		return fmt.Errorf("%w; the registry speaks plain HTTP, which is used only when asked: set %s.insecure to true", err, a.Field)
	}
	return err
}

// credentialsHint says where the credentials of a refused request came from.
func credentialsHint(a *ArtifactSource, what string) string {
	if a.Credentials == nil {
		return fmt.Sprintf("the %s needs credentials: name a Secret in %s.secretRef", what, a.Field)
	}
	return "check the credentials in " + a.Credentials.Secret
}
