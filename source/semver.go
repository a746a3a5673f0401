package source

import (
	"fmt"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
)

// semverRange is a parsed Request.SemVer.
type semverRange struct {
	text string
	c    *semver.Constraints
}

// parseRange parses a semver range such as ">=1.2.0 <2" or "^1.4".
func parseRange(rng string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(rng)
	if err != nil {
		return nil, fmt.Errorf("semver range %q: %w", rng, err)
	}
	return c, nil
}

// semverTag is a tag whose name parses as a version.
type semverTag struct {
	name    plumbing.ReferenceName
	version *semver.Version
}

// semverTags returns the tags of refs whose names are full semantic
// versions, MAJOR.MINOR.PATCH with optional pre-release and build and an
// optional "v" prefix, newest first; equal versions are ordered by name.
// Other tags ("v1.2", "latest", "2024") are not versions.
func semverTags(refs []*plumbing.Reference) []semverTag {
	var out []semverTag
	for _, r := range refs {
		name := r.Name()
		if !name.IsTag() || strings.HasSuffix(string(name), "^{}") {
			continue
		}
		v, err := semver.StrictNewVersion(strings.TrimPrefix(name.Short(), "v"))
		if err != nil {
			continue
		}
		out = append(out, semverTag{name: name, version: v})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if c := out[i].version.Compare(out[j].version); c != 0 {
			return c > 0
		}
		return out[i].name < out[j].name
	})
	return out
}

// newestTagsShown bounds the tags an error lists.
const newestTagsShown = 5

// highestTag returns the tag with the highest version that satisfies c.
// Pre-releases only match when the range names one (">=2.0.0-0").
func highestTag(refs []*plumbing.Reference, rng string, c *semver.Constraints) (plumbing.ReferenceName, error) {
	tags := semverTags(refs)
	for _, t := range tags {
		if c.Check(t.version) {
			return t.name, nil
		}
	}
	if len(tags) == 0 {
		return "", fmt.Errorf("no tag matches semver range %q: the remote has no version tags", rng)
	}
	var seen []string
	for _, t := range tags[:min(len(tags), newestTagsShown)] {
		seen = append(seen, t.name.Short())
	}
	return "", fmt.Errorf("no tag matches semver range %q; newest tags: %s", rng, strings.Join(seen, ", "))
}
