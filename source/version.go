package source

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// highestVersion returns the candidate whose version is the highest in the
// range rng ("" is any stable version). version maps a candidate to its
// version text (an OCI tag "1.2.3_build" to "1.2.3+build"); candidates
// that are not versions are skipped. Pre-releases match only when the range
// names one (">=2.0.0-0"). what names the candidates in errors ("tag").
func highestVersion(candidates []string, rng string, version func(string) string, what string) (string, error) {
	if rng == "" {
		rng = "*"
	}
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return "", fmt.Errorf("semver range %q: %w", rng, err)
	}
	type cand struct {
		name string
		v    *semver.Version
	}
	var all []cand
	for _, s := range candidates {
		v, err := semver.NewVersion(version(s))
		if err != nil {
			continue
		}
		all = append(all, cand{s, v})
	}
	sort.SliceStable(all, func(i, j int) bool {
		if d := all[i].v.Compare(all[j].v); d != 0 {
			return d > 0
		}
		return all[i].name < all[j].name
	})
	for _, x := range all {
		if c.Check(x.v) {
			return x.name, nil
		}
	}
	if len(all) == 0 {
		return "", fmt.Errorf("no %s matches semver range %q: there is no %s that is a version", what, rng, what)
	}
	var newest []string
	for _, x := range all[:min(len(all), 5)] {
		newest = append(newest, x.name)
	}
	return "", fmt.Errorf("no %s matches semver range %q; newest: %s", what, rng, strings.Join(newest, ", "))
}

// isExactVersion reports whether s is one version rather than a range.
func isExactVersion(s string) bool {
	_, err := semver.StrictNewVersion(strings.TrimPrefix(s, "v"))
	return err == nil
}

func same(s string) string { return s }
