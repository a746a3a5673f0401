package audit

import (
	"bytes"
	"encoding/json"

	"github.com/driftguard/driftguard/redact"
)

// withoutCredentials takes credentials out of the URLs r names, before any
// sink (stdout, file, Events, notifications) or the process log sees it:
// the source URL, every URL quoted in the reason or error, and every "url"
// of the policy input (source.url, guardSpec.url, guardSpec.git.url, …).
// r.Source must be r's own copy.
func withoutCredentials(r *Record) {
	if r.Source != nil {
		r.Source.URL = redact.URL(r.Source.URL)
	}
	r.Reason = redact.Text(r.Reason)
	r.Error = redact.Text(r.Error)
	r.PolicyInput = redactURLs(r.PolicyInput)
}

// urlKey is how a "url" member starts in JSON as encoding/json writes it.
var urlKey = []byte(`"url":`)

// redactURLs returns raw with the string value of every "url" member
// redacted, and everything else byte for byte; raw itself when nothing
// changes (the common case, checked without decoding).
func redactURLs(raw json.RawMessage) json.RawMessage {
	var out []byte // nil until something changes
	last := 0
	for i := 0; i < len(raw); {
		j := bytes.Index(raw[i:], urlKey)
		if j < 0 {
			break
		}
		start := i + j + len(urlKey)
		for start < len(raw) && (raw[start] == ' ' || raw[start] == '\t' || raw[start] == '\n' || raw[start] == '\r') {
			start++
		}
		end := stringEnd(raw, start)
		if end < 0 {
			i = start
			continue
		}
		i = end
		value := raw[start+1 : end-1]
		if !bytes.ContainsAny(value, `@?\`) { // no user information, no query, no escape hiding them
			continue
		}
		var s string
		if err := json.Unmarshal(raw[start:end], &s); err != nil {
			continue
		}
		red := redact.URL(s)
		if red == s {
			continue
		}
		enc, err := json.Marshal(red)
		if err != nil {
			continue
		}
		out = append(append(out, raw[last:start]...), enc...)
		last = end
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// stringEnd returns the index after the JSON string that starts at
// raw[start], or -1 when none does.
func stringEnd(raw []byte, start int) int {
	if start >= len(raw) || raw[start] != '"' {
		return -1
	}
	for p := start + 1; p < len(raw); p++ {
		switch raw[p] {
		case '\\':
			p++
		case '"':
			return p + 1
		}
	}
	return -1
}
