package compiled

import (
	"regexp"
	"strconv"
	"strings"
)

// The messages of the compiled policies (Config.policy) begin with these,
// by enforcement mode; ParseDenial reads them back.
const (
	denyVerb = "are not allowed"
	warnVerb = "are reverted by the guard"
)

// Denial is what a compiled policy's message says of a change it refused
// (or, in warn mode, admitted with a warning): the API server's audit log
// keeps the message, not the request's object.
type Denial struct {
	// Mode is deny or warn.
	Mode string
	// Resource and Name of the object.
	Resource, Name string
	// Path and Line of the object's file in Git, the repository URL and
	// revision, and the Guard.
	Path     string
	Line     int
	URL      string
	Revision string
	Guard    string
	// Delete: the change was a delete. Changed are the top-level fields
	// (and metadata parts, "metadata.labels") an update changed. Scale: a
	// write of the scale subresource from OldReplicas to Replicas.
	Delete                bool
	Changed               []string
	Scale                 bool
	OldReplicas, Replicas int64
}

var denialPattern = regexp.MustCompile(`^changes to objects managed by Git (` + denyVerb + `|` + warnVerb + `): ([^/ ]+)/(\S+) comes from (.*):(\d+) in (\S*) at revision (\S*) \(Guard ([^)]*)\); change it there(?: \((.*)\))?$`)

var scalePattern = regexp.MustCompile(`^scale (-?\d+) to (-?\d+)$`)

// ParseDenial reads a compiled policy's message; false: not one.
func ParseDenial(message string) (Denial, bool) {
	m := denialPattern.FindStringSubmatch(strings.TrimSpace(message))
	if m == nil {
		return Denial{}, false
	}
	line, err := strconv.Atoi(m[5])
	if err != nil {
		return Denial{}, false
	}
	d := Denial{Mode: "deny", Resource: m[2], Name: m[3], Path: unescape(m[4]), Line: line, URL: unescape(m[6]), Revision: m[7], Guard: m[8]}
	if m[1] == warnVerb {
		d.Mode = "warn"
	}
	switch what := m[9]; {
	case what == "delete":
		d.Delete = true
	case strings.HasPrefix(what, "changed: "):
		for f := range strings.SplitSeq(strings.TrimPrefix(what, "changed: "), ", ") {
			if f != "" {
				d.Changed = append(d.Changed, f)
			}
		}
	default:
		if s := scalePattern.FindStringSubmatch(what); s != nil {
			d.Scale = true
			d.OldReplicas, _ = strconv.ParseInt(s[1], 10, 64)
			d.Replicas, _ = strconv.ParseInt(s[2], 10, 64)
		}
	}
	return d, true
}

var unescaper = strings.NewReplacer("%7C", "|", "%3D", "=", "%0A", "\n", "%0D", "\r", "%25", "%")

func unescape(s string) string { return unescaper.Replace(s) }
