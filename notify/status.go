package notify

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/audit"
)

// CommitStatus is the metric kind of commit statuses.
const CommitStatus = "commit-status"

// Results of a revision, for commit statuses.
const (
	Applied = "applied"
	Failed  = "failed"
)

// Status is what a record says about a revision: applied or failed.
type Status struct {
	Guard    string
	Repo     string // the source URL, credentials removed
	Revision string
	Result   string // Applied or Failed
	Reason   string
}

// sourceFailures are reasons of SYNC errors about the source or the Guard
// rather than the revision: the revision they name is not at fault.
var sourceFailures = map[string]bool{v1alpha1.ReasonFetchFailed: true, v1alpha1.ReasonAuthFailed: true, v1alpha1.ReasonRenderSettingsFailed: true}

var commitSHA = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// StatusOf returns the status a record sets on a revision, if any: a sync
// of a revision that succeeded (type apply, operation SYNC, action applied)
// or failed (type error, operation SYNC, or RENDER for a revision that does
// not render). Failures to reach the source name no revision of theirs and
// set none; nor do revisions that are not Git commits (OCI, Helm, bucket).
func StatusOf(r audit.Record) (Status, bool) {
	if r.Source == nil || !commitSHA.MatchString(r.Source.Revision) || r.Guard == "" {
		return Status{}, false
	}
	st := Status{Guard: r.Guard, Repo: r.Source.URL, Revision: r.Source.Revision, Reason: r.Reason}
	switch {
	case r.Type == audit.Apply && r.Operation == "SYNC" && r.Action == Applied && r.Error == "":
		st.Result = Applied
	case r.Type == audit.Error && r.Operation == "SYNC" && !sourceFailures[r.Reason]:
		st.Result = Failed
	case r.Type == audit.Error && r.Operation == "RENDER":
		st.Result = Failed
		if st.Reason == "" {
			st.Reason = v1alpha1.ReasonRenderFailed
		}
	default:
		return Status{}, false
	}
	return st, true
}

// Repository is a repository on a Git host.
type Repository struct {
	Host string // host name, lower case, without port
	Path string // owner/name, or GitLab's group/subgroup/name
}

// ParseRepository reads the host and path of a Git URL: https://host/o/r(.git),
// ssh://git@host:22/o/r.git, git@host:o/r.git, and host:o/r.git (the audit
// log takes the user out of an scp-like URL).
func ParseRepository(raw string) (Repository, error) {
	var host, path string
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return Repository{}, fmt.Errorf("repository URL does not parse")
		}
		switch u.Scheme {
		case "https", "http", "ssh", "git":
		default:
			return Repository{}, fmt.Errorf("repository URL scheme %q is not a Git host's", u.Scheme)
		}
		host, path = u.Hostname(), u.Path
	} else {
		h, p, ok := strings.Cut(raw, ":")
		if !ok || strings.Contains(h, "/") {
			return Repository{}, fmt.Errorf("repository URL is neither scheme://host/path nor host:path")
		}
		if i := strings.LastIndexByte(h, '@'); i >= 0 {
			h = h[i+1:]
		}
		host, path = h, p
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	segs := strings.Split(path, "/")
	for _, s := range segs {
		if s == "" || s == "." || s == ".." {
			return Repository{}, fmt.Errorf("repository path %q is not owner/name", path)
		}
	}
	if host == "" || len(segs) < 2 {
		return Repository{}, fmt.Errorf("repository path %q is not owner/name", path)
	}
	return Repository{Host: strings.ToLower(host), Path: path}, nil
}

// statusRequest builds the API request that sets st on its revision.
func statusRequest(c Config, st Status) (method, target string, body []byte, header http.Header, err error) {
	repo, err := ParseRepository(st.Repo)
	if err != nil {
		return "", "", nil, nil, err
	}
	// The token goes only to the API in the Secret, and only for
	// repositories on its host: a Guard's URL (which its author chooses)
	// cannot make the guard write statuses elsewhere with it.
	if want := c.gitHost(); repo.Host != want {
		return "", "", nil, nil, fmt.Errorf("repository host %s is not the provider's Git host %s (key gitHost)", repo.Host, want)
	}
	name := c.Context + "/" + st.Guard
	desc := fmt.Sprintf("revision applied by guard %s", st.Guard)
	if st.Result == Failed {
		desc = fmt.Sprintf("revision failed on guard %s: %s", st.Guard, st.Reason)
	}
	desc = cut(desc, 140) // GitHub's limit
	link := ""
	if c.TargetURL != "" {
		link = strings.NewReplacer("{guard}", url.PathEscape(st.Guard), "{revision}", st.Revision).Replace(c.TargetURL)
	}
	header = http.Header{}
	header.Set("Content-Type", "application/json")
	switch c.Provider {
	case GitHub:
		segs := strings.Split(repo.Path, "/")
		if len(segs) != 2 {
			return "", "", nil, nil, fmt.Errorf("repository path %q is not owner/name", repo.Path)
		}
		state := "success"
		if st.Result == Failed {
			state = "failure"
		}
		body, err = json.Marshal(struct {
			State       string `json:"state"`
			Context     string `json:"context"`
			Description string `json:"description"`
			TargetURL   string `json:"target_url,omitempty"`
		}{state, name, desc, link})
		header.Set("Accept", "application/vnd.github+json")
		header.Set("X-GitHub-Api-Version", "2022-11-28")
		header.Set("Authorization", "Bearer "+c.Token)
		return http.MethodPost, c.apiURL() + "/repos/" + url.PathEscape(segs[0]) + "/" + url.PathEscape(segs[1]) + "/statuses/" + st.Revision, body, header, err
	default: // GitLab
		state := "success"
		if st.Result == Failed {
			state = "failed"
		}
		body, err = json.Marshal(struct {
			State       string `json:"state"`
			Name        string `json:"name"`
			Description string `json:"description"`
			TargetURL   string `json:"target_url,omitempty"`
		}{state, name, desc, link})
		header.Set("PRIVATE-TOKEN", c.Token)
		// The project's path, URL-encoded whole (group%2Fname), is its id.
		return http.MethodPost, c.apiURL() + "/projects/" + url.PathEscape(repo.Path) + "/statuses/" + st.Revision, body, header, err
	}
}
