package source

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// ErrPlainHTTPCredentials is wrapped by the error of credentials that
// would go over plain http://, in clear text, where anyone on the path can
// read them. Git credentials are refused whatever the host (loopback
// included); those of a chart repository only go when its source says
// insecure.
var ErrPlainHTTPCredentials = errors.New("credentials are never sent over plain http://")

// CheckURL returns an error wrapping ErrPlainHTTPCredentials when a would
// send credentials to rawURL in clear text: username/password (basic
// auth), a bearerToken, or the URL's own user information, to an http://
// URL. Other mismatches of credentials and URL are reported when fetching.
func (a *Auth) CheckURL(rawURL string) error {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return fmt.Errorf("parse URL: %w", ErrURLDoesNotParse)
	}
	return a.checkPlainHTTP(ep)
}

// ErrURLDoesNotParse stands for a URL parse error, which would quote the
// URL and its credentials.
var ErrURLDoesNotParse = errors.New("the URL does not parse")

func (a *Auth) checkPlainHTTP(ep *transport.Endpoint) error {
	if ep.Protocol != "http" {
		return nil
	}
	var what string
	switch {
	case ep.User != "" || ep.Password != "":
		what = "the URL's user information"
	case a == nil:
		return nil
	case a.BearerToken != "":
		what = "the bearerToken"
	case a.Username != "" || a.Password != "":
		what = "the username and password (basic auth)"
	default:
		return nil
	}
	host := ep.Host
	if ep.Port > 0 {
		host = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	}
	return refusePlainHTTP(what, host, "")
}

// CheckURL returns an error wrapping ErrPlainHTTPCredentials when c (nil:
// none) would go to rawURL, a chart repository, in clear text: an http://
// URL with username/password, a bearerToken or user information of its
// own, unless insecure (the source's insecure: true) allows it. field
// names that setting in the message ("spec.helmRepository").
func (c *Credentials) CheckURL(rawURL string, insecure bool, field string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("parse URL: %w", ErrURLDoesNotParse)
	}
	if u.Scheme != "http" || insecure {
		return nil
	}
	var what string
	switch {
	case u.User != nil:
		what = "the URL's user information"
	case c == nil:
		return nil
	case c.BearerToken != "":
		what = "the bearerToken"
	case c.Username != "" || c.Password != "":
		what = "the username and password (basic auth)"
	default:
		return nil
	}
	return refusePlainHTTP(what, u.Host, field)
}

func refusePlainHTTP(what, host, field string) error {
	if field == "" {
		return fmt.Errorf("%s would go in clear text to http://%s: use an https:// URL: %w", what, host, ErrPlainHTTPCredentials)
	}
	return fmt.Errorf("%s would go in clear text to http://%s: use an https:// URL, or set %s.insecure to true to send them anyway: %w", what, host, field, ErrPlainHTTPCredentials)
}
