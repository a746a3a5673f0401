package notify

import (
	"fmt"
	"net/url"
	"strings"
)

// Providers: where and in which shape notifications go.
const (
	// Generic posts the Notification as JSON, signed when HMACKey is set.
	Generic = "generic"
	// Slack posts an incoming-webhook message (text and blocks).
	Slack = "slack"
	// Teams posts a message with an Adaptive Card (Teams Workflows and
	// incoming webhooks).
	Teams = "teams"
	// GitHub sets a commit status on each revision a Guard applied or failed.
	GitHub = "github"
	// GitLab sets a commit status on each revision a Guard applied or failed.
	GitLab = "gitlab"
)

// Config is one notification Secret read: its keys, of which only those of
// the provider are used. Every value is a secret: none is logged, put in a
// record or sent anywhere but where it belongs (Address and APIURL are the
// destinations, Token goes to APIURL only, HMACKey never leaves).
type Config struct {
	// Provider is one of Generic (the default), Slack, Teams, GitHub, GitLab
	// (key "provider").
	Provider string
	// Address is the URL notifications are posted to (key "address"):
	// Generic, Slack, Teams.
	Address string
	// HMACKey signs a Generic notification (key "hmacKey"): header
	// X-Driftguard-Signature: sha256=<hex HMAC-SHA256 of the body>.
	HMACKey string
	// Token authorizes commit statuses (key "token"): GitHub's
	// Authorization: Bearer, GitLab's PRIVATE-TOKEN.
	Token string
	// APIURL is the API's base URL (key "apiURL"): GitHub Enterprise's
	// https://HOST/api/v3, a GitLab's https://HOST/api/v4. Defaults:
	// https://api.github.com, https://gitlab.com/api/v4.
	APIURL string
	// GitHost is the host a Guard's repository URL must have for its
	// revisions to get a status (key "gitHost"). Default: github.com or
	// gitlab.com without APIURL, else the host of APIURL without a leading
	// "api.".
	GitHost string
	// Context names the status (key "context"; GitHub's context, GitLab's
	// name): CONTEXT/GUARD. Default "driftguard".
	Context string
	// TargetURL is linked from the status (key "targetURL"); "{guard}" and
	// "{revision}" in it are replaced.
	TargetURL string
}

// ConfigFrom reads a Config from a notification Secret's data and checks it.
// Errors name the key, never its value.
func ConfigFrom(data map[string][]byte) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(string(data[k])) }
	c := Config{
		Provider: strings.ToLower(get("provider")), Address: get("address"), HMACKey: get("hmacKey"),
		Token: get("token"), APIURL: strings.TrimRight(get("apiURL"), "/"), GitHost: get("gitHost"),
		Context: get("context"), TargetURL: get("targetURL"),
	}
	if c.Provider == "" {
		c.Provider = Generic
	}
	if c.Context == "" {
		c.Context = "driftguard"
	}
	switch c.Provider {
	case Generic, Slack, Teams:
		if c.Address == "" {
			return c, fmt.Errorf("key %q is needed for provider %s", "address", c.Provider)
		}
	case GitHub, GitLab:
		if c.Token == "" {
			return c, fmt.Errorf("key %q is needed for provider %s", "token", c.Provider)
		}
		if c.APIURL != "" {
			u, err := url.Parse(c.APIURL)
			if err != nil || u.Hostname() == "" || (u.Scheme != "https" && u.Scheme != "http") {
				return c, fmt.Errorf("key %q is not an http(s) URL", "apiURL")
			}
		}
	default:
		return c, fmt.Errorf("key %q: unknown provider %q (generic, slack, teams, github, gitlab)", "provider", c.Provider)
	}
	return c, nil
}

// apiURL is the API base URL in force.
func (c Config) apiURL() string {
	switch {
	case c.APIURL != "":
		return c.APIURL
	case c.Provider == GitLab:
		return "https://gitlab.com/api/v4"
	default:
		return "https://api.github.com"
	}
}

// gitHost is the host a repository URL must have to get a status.
func (c Config) gitHost() string {
	switch {
	case c.GitHost != "":
		return strings.ToLower(c.GitHost)
	case c.APIURL == "" && c.Provider == GitLab:
		return "gitlab.com"
	case c.APIURL == "":
		return "github.com"
	}
	u, err := url.Parse(c.APIURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(strings.ToLower(u.Hostname()), "api.")
}

// commitStatus reports whether the provider sets commit statuses rather
// than posting messages.
func (c Config) commitStatus() bool { return c.Provider == GitHub || c.Provider == GitLab }
