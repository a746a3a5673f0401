package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"

	"github.com/driftguard/driftguard/health"
)

// otlpRecord maps r to an OTLP log record: its time, a severity by type
// and action, the Event's message as the body, the event name
// driftguard.audit.<type>, and one attribute per non-empty field of r
// (docs/audit.md, "OpenTelemetry", has the table). r is already redacted
// (Logger.Log): nothing here adds a value r does not hold.
func otlpRecord(r Record) otellog.Record {
	var rec otellog.Record
	rec.SetTimestamp(r.Time)
	sev, text := otlpSeverity(r)
	rec.SetSeverity(sev)
	rec.SetSeverityText(text)
	rec.SetEventName("driftguard.audit." + string(r.Type))
	rec.SetBody(attribute.StringValue(eventMessage(r)))
	rec.AddAttributes(otlpAttributes(r)...)
	return rec
}

// otlpSeverity is ERROR for failures, WARN for drift, denials, warnings,
// changes to the guard's own objects and a Degraded health, INFO otherwise.
func otlpSeverity(r Record) (otellog.Severity, string) {
	action := strings.ToLower(r.Action)
	switch {
	case r.Type == Error || r.Error != "":
		return otellog.SeverityError, "ERROR"
	case r.Type == Drift, r.Type == Protection,
		r.Type == Decision && (action == "deny" || action == "warn"),
		r.Type == Health && strings.EqualFold(r.Action, string(health.Degraded)):
		return otellog.SeverityWarn, "WARN"
	}
	return otellog.SeverityInfo, "INFO"
}

// otlpAttributes returns one attribute per non-empty field of r.
func otlpAttributes(r Record) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 16)
	str := func(k, v string) {
		if v != "" {
			a = append(a, attribute.String(k, v))
		}
	}
	str("driftguard.type", string(r.Type))
	str("driftguard.guard", r.Guard)
	str("driftguard.user", r.User)
	if len(r.Groups) > 0 {
		a = append(a, attribute.StringSlice("driftguard.groups", r.Groups))
	}
	str("driftguard.manager", r.Manager)
	str("driftguard.operation", r.Operation)
	str("driftguard.object.group", r.Object.Group)
	str("driftguard.object.version", r.Object.Version)
	str("driftguard.object.kind", r.Object.Kind)
	str("driftguard.object.namespace", r.Object.Namespace)
	str("driftguard.object.name", r.Object.Name)
	if len(r.Fields) > 0 {
		a = append(a, attribute.Slice("driftguard.fields", otlpFields(r.Fields)...))
	}
	str("driftguard.action", r.Action)
	str("driftguard.reason", r.Reason)
	str("driftguard.rule", r.Rule)
	str("driftguard.policy_action", r.PolicyAction)
	str("driftguard.policy_revision", r.PolicyRevision)
	if s := r.Source; s != nil {
		str("driftguard.source.url", s.URL)
		str("driftguard.source.revision", s.Revision)
		str("driftguard.source.path", s.Path)
		if s.Line > 0 {
			a = append(a, attribute.Int("driftguard.source.line", s.Line))
		}
	}
	str("driftguard.request_uid", r.RequestUID)
	if r.DryRun {
		a = append(a, attribute.Bool("driftguard.dry_run", true))
	}
	if r.Orphan {
		a = append(a, attribute.Bool("driftguard.orphan", true))
	}
	if len(r.PolicyInput) > 0 {
		a = append(a, attribute.String("driftguard.policy_input", string(r.PolicyInput)))
	}
	str("driftguard.error", r.Error)
	if r.DurationMS != 0 {
		a = append(a, attribute.Float64("driftguard.duration_ms", r.DurationMS))
	}
	return a
}

// otlpFields maps each field to a map of path, change, and the desired,
// live and old values as JSON text (a value may be any JSON value; text
// keeps it whole for every backend).
func otlpFields(fs []Field) []attribute.Value {
	out := make([]attribute.Value, 0, len(fs))
	for _, f := range fs {
		kv := []attribute.KeyValue{attribute.String("path", f.Path)}
		if f.Change != "" {
			kv = append(kv, attribute.String("change", f.Change))
		}
		for _, v := range []struct {
			k string
			v any
		}{{"desired", f.Desired}, {"live", f.Live}, {"old", f.Old}} {
			if v.v == nil {
				continue
			}
			b, err := json.Marshal(v.v)
			if err != nil {
				b = []byte(`"(unprintable)"`)
			}
			kv = append(kv, attribute.String(v.k, string(b)))
		}
		out = append(out, attribute.MapValue(kv...))
	}
	return out
}

// ReadOTLPHeaders reads the headers of the OTLP sink from a file (a
// mounted Secret): one header a line, "Name: value" or "name=value", split
// at the first ':' or '='; blank lines and lines starting with # are
// skipped. Errors name the file and line, never a value.
func ReadOTLPHeaders(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read OTLP headers: %w", err)
	}
	headers := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.IndexAny(line, ":=")
		if i <= 0 {
			return nil, fmt.Errorf("OTLP headers file %s, line %d: want \"Name: value\" or \"name=value\"", path, n)
		}
		name := strings.ToLower(strings.TrimSpace(line[:i]))
		if _, dup := headers[name]; dup {
			return nil, fmt.Errorf("OTLP headers file %s, line %d: header %q given twice", path, n, name)
		}
		headers[name] = strings.TrimSpace(line[i+1:])
		if err := checkHeaders(map[string]string{name: headers[name]}); err != nil {
			return nil, fmt.Errorf("OTLP headers file %s, line %d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read OTLP headers file %s: %w", path, err)
	}
	return headers, nil
}

// checkHeaders refuses header names that are not HTTP tokens and values
// that are empty or hold control characters, naming the header but never
// showing its value.
func checkHeaders(h map[string]string) error {
	for name, v := range h {
		if name == "" || strings.IndexFunc(name, func(c rune) bool { return !isTokenChar(c) }) >= 0 {
			return fmt.Errorf("header name %q is not an HTTP token", name)
		}
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("header %s has an empty value", name)
		}
		if strings.IndexFunc(v, func(c rune) bool { return c < 0x20 && c != '\t' || c == 0x7f }) >= 0 {
			return fmt.Errorf("header %s: its value holds a control character", name)
		}
	}
	return nil
}

func isTokenChar(c rune) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", c)
}
