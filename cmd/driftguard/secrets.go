package main

import (
	"github.com/driftguard/driftguard/redact"
	"github.com/driftguard/driftguard/render"
)

// cliSecrets is the owner, in redact.Secrets, of the secret values of what
// a command rendered (diff, validate): its output is scrubbed of them.
const cliSecrets = "driftguard-cli"

// registerSecrets registers the secret values of objs' renders (decrypted
// SOPS values, variables from Secrets, data of Secrets) for this process.
func registerSecrets(objs []*render.Object) {
	var all []string
	seen := map[*redact.Sensitive]bool{}
	for _, o := range objs {
		if s := o.Sensitive(); s != nil && !seen[s] {
			seen[s] = true
			all = append(all, s.List()...)
		}
	}
	redact.Secrets.Set(cliSecrets, all)
}
