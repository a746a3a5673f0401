package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// deniedBuiltins are the builtins that policies and health rules may not
// call, besides every builtin OPA marks non-deterministic, with why. With
// --policy-git a policy is in the hands of everyone who may commit to that
// repository: it must not reach the network, read the guard's environment,
// or decide differently for the same input.
var deniedBuiltins = map[string]string{
	// Marked non-deterministic by OPA; named here for a precise message.
	"http.send":          "it reaches the network",
	"net.lookup_ip_addr": "it reaches the network (DNS)",
	"json.verify_schema": "it may fetch remote $ref schemas over the network",
	"json.match_schema":  "it may fetch remote $ref schemas over the network",
	"opa.runtime":        "it exposes the guard's environment and configuration",
	"time.now_ns":        "it reads the wall clock",
	"rand.intn":          "it is random",
	"uuid.rfc4122":       "it is random",
	"io.jwt.decode_verify": "it reads the wall clock (token expiry); " +
		"driftguard policies never see tokens worth verifying",
	"io.jwt.encode_sign":     "it is random (signatures)",
	"io.jwt.encode_sign_raw": "it is random (signatures)",
	// Not marked by OPA.
	"trace": "it writes to the evaluation trace, which the guard does not serve; use print, logged at verbosity 1",
	"crypto.x509.parse_and_verify_certificates":              "it checks validity against the wall clock",
	"crypto.x509.parse_and_verify_certificates_with_options": "it checks validity against the wall clock",
}

// Capabilities returns the OPA capabilities every policy and health rule
// is compiled with, by the guard and by `driftguard policy
// check|eval|test|replay`: the builtins of this OPA version without the
// denied ones (DeniedBuiltins), and no host allowed for network access.
// A module that calls a denied builtin does not compile; the error names
// the builtin, why it is denied, and file:line:col.
func Capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	caps.Builtins = slices.DeleteFunc(caps.Builtins, func(b *ast.Builtin) bool {
		_, denied := deniedReason(b)
		return denied
	})
	caps.AllowNet = []string{} // empty: no host (nil would allow every host)
	return caps
}

// DeniedBuiltins returns the names of the builtins of this OPA version that
// policies and health rules may not call, with why, sorted by name.
func DeniedBuiltins() [][2]string {
	var out [][2]string
	for _, b := range ast.CapabilitiesForThisVersion().Builtins {
		if why, denied := deniedReason(b); denied {
			out = append(out, [2]string{b.Name, why})
		}
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}

func deniedReason(b *ast.Builtin) (string, bool) {
	if why, ok := deniedBuiltins[b.Name]; ok {
		return why, true
	}
	if b.IsNondeterministic() {
		return "it is non-deterministic", true
	}
	return "", false
}

// explainDenied rewrites OPA's "undefined function NAME" for a denied
// builtin into a message that says it is denied and why.
func explainDenied(msg string) string {
	name, ok := strings.CutPrefix(msg, "undefined function ")
	if !ok {
		return msg
	}
	b, known := ast.BuiltinMap[name]
	if !known {
		return msg
	}
	why, denied := deniedReason(b)
	if !denied {
		return msg
	}
	return fmt.Sprintf("builtin %s is not allowed in driftguard policies and health rules: %s (no network access, deterministic builtins only; see docs/security.md)", name, why)
}
