package drift

// CompareBoth is Compare, followed by the fields live has that desired does
// not set at all (Compare leaves those out: they belong to someone else). Use
// it where every field counts, such as a webhook configuration; such added
// fields come with only Live set.
func CompareBoth(desired, live map[string]any, opts Options) []Change {
	changes := Compare(desired, live, opts)
	seen := make(map[string]bool, len(changes))
	for _, c := range changes {
		seen[c.Path] = true
	}
	for _, c := range Compare(live, desired, opts) {
		if !seen[c.Path] && c.Missing {
			changes = append(changes, Change{Path: c.Path, Live: c.Desired})
		}
	}
	return changes
}
