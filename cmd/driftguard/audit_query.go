package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/audit"
)

// rotatedLayout is the time in the name of a rotated audit file, as the
// file sink (lumberjack) names it: audit-2026-12-04T10-00-00.000.log.
const rotatedLayout = "2006-01-02T15-04-05.000"

// maxMalformedShown is how many malformed lines query describes one by
// one; the rest are only counted.
const maxMalformedShown = 20

// queryFilter selects records for audit query; empty fields match all.
type queryFilter struct {
	since, until                               time.Time
	user, guard, action, kind, namespace, name string
	typ                                        string
}

func (f queryFilter) match(r audit.Record) bool {
	return (f.since.IsZero() || !r.Time.Before(f.since)) &&
		(f.until.IsZero() || !r.Time.After(f.until)) &&
		(f.user == "" || r.User == f.user || r.Manager == f.user) &&
		(f.guard == "" || r.Guard == f.guard) &&
		(f.action == "" || strings.EqualFold(r.Action, f.action)) &&
		(f.kind == "" || strings.EqualFold(r.Object.Kind, f.kind)) &&
		(f.namespace == "" || r.Object.Namespace == f.namespace) &&
		(f.name == "" || r.Object.Name == f.name) &&
		(f.typ == "" || string(r.Type) == f.typ)
}

// queryFlags are audit query's flags as given.
type queryFlags struct {
	files                                      []string
	since, until, output                       string
	user, guard, action, kind, namespace, name string
	typ                                        string
}

func newAuditQueryCommand() *cobra.Command {
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "query [FILE...]",
		Short: "Find audit records in the audit file (--audit-file) and its rotated files",
		Long: `query reads the audit file the guard writes (--audit-file; the files
given, --file, or $DRIFTGUARD_AUDIT_FILE) together with the files it was
rotated to (NAME-<time>.EXT beside it, .gz too), oldest first, and prints
the records that match every filter given, as a table or, with -o json,
one JSON record a line as the guard wrote it.

A line that is not an audit record is reported on standard error with its
file and line number, skipped and counted; it does not fail the query.`,
		Example: `  driftguard audit query --since 1h --user alice --guard shop
  driftguard audit query --file /var/log/driftguard/audit.log --action deny --kind Deployment -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAuditQuery(cmd.OutOrStdout(), cmd.ErrOrStderr(), append(q.files, args...), q, time.Now())
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&q.files, "file", nil, "audit file(s) to read (default $DRIFTGUARD_AUDIT_FILE); rotated files beside each are read too")
	fl.StringVar(&q.since, "since", "", "only records at or after this time: a duration back from now (90s, 1h, 2d) or an RFC3339 time")
	fl.StringVar(&q.until, "until", "", "only records at or before this time: a duration back from now or an RFC3339 time")
	fl.StringVar(&q.user, "user", "", "only records by this user or field manager")
	fl.StringVar(&q.guard, "guard", "", "only records of this Guard")
	fl.StringVar(&q.action, "action", "", "only this action: deny, allow, warn, revert, reverted, configured, deleted, ...")
	fl.StringVar(&q.kind, "kind", "", "only objects of this kind (Deployment, ConfigMap, ...)")
	fl.StringVar(&q.namespace, "namespace", "", "only objects in this namespace")
	fl.StringVar(&q.name, "name", "", "only objects of this name")
	fl.StringVar(&q.typ, "type", "", "only this record type: decision, drift, revert, recreate, apply, prune, error, health, protection")
	fl.StringVarP(&q.output, "output", "o", "table", "table or json (one record a line)")
	return cmd
}

// runAuditQuery resolves the flags against now and prints the matching
// records of files to out; malformed lines are described on errOut.
func runAuditQuery(out, errOut io.Writer, files []string, q queryFlags, now time.Time) error {
	if q.output != "table" && q.output != "json" {
		return fmt.Errorf("--output %q: want table or json", q.output)
	}
	f := queryFilter{user: q.user, guard: q.guard, action: q.action, kind: q.kind, namespace: q.namespace, name: q.name, typ: q.typ}
	var err error
	if f.since, err = parseQueryTime("--since", q.since, now); err != nil {
		return err
	}
	if f.until, err = parseQueryTime("--until", q.until, now); err != nil {
		return err
	}
	if len(files) == 0 {
		if env := os.Getenv("DRIFTGUARD_AUDIT_FILE"); env != "" {
			files = []string{env}
		} else {
			return errors.New("no audit file: give FILE, --file or $DRIFTGUARD_AUDIT_FILE (the guard's --audit-file)")
		}
	}
	s := &queryScan{filter: f, errOut: errOut}
	for _, file := range files {
		paths, err := auditFiles(file, f.since)
		if err != nil {
			return err
		}
		for _, p := range paths {
			if err := s.readFile(p); err != nil {
				return err
			}
		}
	}
	if s.malformed > 0 {
		fmt.Fprintf(errOut, "audit query: %d malformed lines skipped\n", s.malformed)
	}
	return printQueryResult(out, q.output, s.matched)
}

// parseQueryTime reads a --since or --until value: a duration back from
// now (Go's, or whole days as 2d), or an RFC3339 time. Empty is zero.
func parseQueryTime(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%s %q: a duration back from now must not be negative", flag, v)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want a duration back from now (90s, 1h, 2d) or an RFC3339 time (2026-12-04T10:00:00Z)", flag, v)
}

// rotatedFile is a file the sink rotated file to, and when.
type rotatedFile struct {
	path string
	at   time.Time
}

// auditFiles returns file's rotated files, oldest first, then file
// itself. A rotated file rotated before since holds no record at or after
// it and is left out. file itself must exist.
func auditFiles(file string, since time.Time) ([]string, error) {
	if _, err := os.Stat(file); err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	dir, base := filepath.Split(file)
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	entries, err := os.ReadDir(filepath.Clean(dir + "."))
	if err != nil {
		return nil, fmt.Errorf("list rotated audit files: %w", err)
	}
	var rotated []rotatedFile
	for _, e := range entries {
		name := e.Name()
		stamp, ok := strings.CutPrefix(strings.TrimSuffix(name, ".gz"), prefix)
		if !ok || e.IsDir() || !strings.HasSuffix(stamp, ext) {
			continue
		}
		at, err := time.Parse(rotatedLayout, strings.TrimSuffix(stamp, ext))
		if err != nil || (!since.IsZero() && at.Before(since)) {
			continue
		}
		rotated = append(rotated, rotatedFile{path: filepath.Join(dir, name), at: at})
	}
	slices.SortFunc(rotated, func(a, b rotatedFile) int { return a.at.Compare(b.at) })
	out := make([]string, 0, len(rotated)+1)
	for _, r := range rotated {
		out = append(out, r.path)
	}
	return append(out, file), nil
}

// queryScan reads audit files line by line.
type queryScan struct {
	filter    queryFilter
	errOut    io.Writer
	matched   []matchedRecord
	malformed int
}

// matchedRecord is a record that matched, and its line as written.
type matchedRecord struct {
	rec  audit.Record
	line []byte
}

func (s *queryScan) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit file: %w", err)
	}
	defer f.Close()
	var in io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("audit file %s: %w", path, err)
		}
		defer func() { _ = zr.Close() }() // a read error is already reported
		in = zr
	}
	r := bufio.NewReaderSize(in, 1<<20)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			s.line(path, n, line, err == io.EOF)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read audit file %s: %w", path, err)
		}
	}
}

// line decodes one line, keeps it when it matches, and reports it when it
// is not an audit record (last: the file's last line, without a newline).
func (s *queryScan) line(path string, n int, line []byte, last bool) {
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return
	}
	var rec audit.Record
	err := json.Unmarshal(trimmed, &rec)
	switch {
	case err == nil && (rec.Type == "" || rec.Time.IsZero()):
		err = errors.New("a JSON object without an audit record's type and time")
	case err != nil && last:
		err = fmt.Errorf("%w (the last line, without a newline: still being written?)", err)
	}
	if err != nil {
		s.malformed++
		if s.malformed <= maxMalformedShown {
			fmt.Fprintf(s.errOut, "audit query: %s:%d: malformed line skipped: %v\n", path, n, err)
		}
		return
	}
	if s.filter.match(rec) {
		s.matched = append(s.matched, matchedRecord{rec: rec, line: trimmed})
	}
}

func printQueryResult(out io.Writer, output string, recs []matchedRecord) error {
	if output == "json" {
		for _, m := range recs {
			if _, err := fmt.Fprintf(out, "%s\n", m.line); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tTYPE\tACTION\tUSER\tGUARD\tOBJECT\tDETAIL")
	for _, m := range recs {
		r := m.rec
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format(time.RFC3339), r.Type, orDash(r.Action),
			orDash(r.User), orDash(r.Guard), orDash(objectText(r.Object)), orDash(queryDetail(r)))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func objectText(o audit.Object) string {
	if o.Name == "" {
		return ""
	}
	return o.String()
}

// queryDetail is the changed fields' paths, the rule and reason, and the
// error, on one line.
func queryDetail(r audit.Record) string {
	var parts []string
	if len(r.Fields) > 0 {
		paths := make([]string, len(r.Fields))
		for i, f := range r.Fields {
			paths[i] = f.Path
		}
		parts = append(parts, strings.Join(paths, ","))
	}
	if r.Rule != "" || r.Reason != "" {
		parts = append(parts, strings.TrimPrefix(r.Rule+": "+r.Reason, ": "))
	}
	if r.Error != "" {
		parts = append(parts, "error: "+r.Error)
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}
