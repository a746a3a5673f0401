// Package redact takes credentials out of what driftguard writes where
// people and other systems read it: denial messages, audit records,
// Events, notifications, a Guard's status and the log. URL is the one
// function for source URLs; Text applies it to every URL quoted in a
// message (an error of a Git or HTTP client).
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Placeholder replaces the value of a sensitive query parameter.
const Placeholder = "REDACTED"

// sensitiveParams are query parameters whose value is a credential,
// lower-case. Besides them, every parameter whose name contains one of
// sensitiveParts is redacted.
var sensitiveParams = map[string]bool{
	"sig":  true, // Azure SAS
	"code": true, // OAuth authorization code
	"auth": true,
	"pass": true,
	"pwd":  true,
	"key":  true,
}

var sensitiveParts = []string{
	"token",      // token, access_token, private_token, id_token, X-Amz-Security-Token
	"signature",  // X-Amz-Signature, X-Goog-Signature, signature
	"credential", // X-Amz-Credential, X-Goog-Credential
	"secret",     // client_secret
	"password", "passwd",
	"apikey", "api_key", "api-key",
	"session",
}

// IsSensitiveParam reports whether a query parameter's value is redacted.
func IsSensitiveParam(name string) bool {
	n := strings.ToLower(name)
	if sensitiveParams[n] {
		return true
	}
	for _, part := range sensitiveParts {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// URL returns raw without credentials: the user information
// (https://user:token@host/…, https://ghp_token@host/…, ssh://git@host/…,
// git@host:org/repo) is removed entirely, and the value of every
// sensitive query parameter (token, access_token, X-Amz-Signature, sig,
// …; see IsSensitiveParam) is replaced with REDACTED. It works on the
// text, so a URL that does not parse is redacted too; anything else is
// kept as it is, and a URL without credentials comes back unchanged.
func URL(raw string) string {
	if !strings.ContainsAny(raw, "@?") {
		return raw // the fast path: nothing to take out
	}
	rest, fragment, hasFragment := strings.Cut(raw, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	out := withoutUserinfo(rest)
	if hasQuery {
		out += "?" + redactQuery(query)
	}
	if hasFragment {
		out += "#" + fragment
	}
	return out
}

// withoutUserinfo removes the user information of a URL without its query
// and fragment: what precedes the last @ of the authority
// (scheme://authority/path), or of an scp-like user@host:path.
func withoutUserinfo(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		start := i + len("://")
		rest := s[start:]
		end := strings.IndexByte(rest, '/')
		if end < 0 {
			end = len(rest)
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			return s[:start] + rest[at+1:]
		}
		// A password with an unescaped '/' (u:pa/ss@host) ends the
		// authority early: a ':' there that is not a port's starts a
		// password, which the next '@' ends.
		if c := strings.IndexByte(rest[:end], ':'); c >= 0 && !isPort(rest[c+1:end]) {
			if at := strings.IndexByte(rest[end:], '@'); at >= 0 {
				return s[:start] + rest[end+at+1:]
			}
		}
		return s
	}
	// scp-like: user@host:path, where the part before ':' has no '/'.
	colon := strings.IndexByte(s, ':')
	slash := strings.IndexByte(s, '/')
	if colon < 0 || (slash >= 0 && slash < colon) {
		return s
	}
	if at := strings.LastIndexByte(s[:colon], '@'); at >= 0 {
		return s[at+1:]
	}
	return s
}

func isPort(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// redactQuery replaces the values of the sensitive parameters of a raw
// query, keeping everything else byte for byte (order, escaping).
func redactQuery(q string) string {
	parts := strings.Split(q, "&")
	for i, p := range parts {
		rawName, _, _ := strings.Cut(p, "=")
		name := rawName
		if n, err := url.QueryUnescape(rawName); err == nil {
			name = n
		}
		if IsSensitiveParam(name) {
			parts[i] = rawName + "=" + Placeholder
		}
	}
	return strings.Join(parts, "&")
}

// urlInText finds URLs in a message: a scheme, "://", and everything up to
// white space or a quote.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `]+`)

// Text returns s with every URL in it redacted as URL does, e.g. an
// error of a Git or HTTP client that quotes the URL it was given.
func Text(s string) string {
	if !strings.Contains(s, "://") || !strings.ContainsAny(s, "@?") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, func(u string) string {
		// Punctuation that ends a sentence or a clause ("fetch URL: …")
		// is not part of the URL (nor of a redacted value).
		trimmed := strings.TrimRight(u, ".,;:!)]}")
		return URL(trimmed) + u[len(trimmed):]
	})
}
