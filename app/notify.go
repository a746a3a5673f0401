package app

import (
	"strings"
)

// notifySecrets splits --notify-secret: one Secret name, or several
// separated by commas, each a provider of its own.
func notifySecrets(flag string) []string {
	var out []string
	for _, n := range strings.Split(flag, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
