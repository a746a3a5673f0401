package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/audit"
)

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Read the audit log"}
	cmd.AddCommand(newAuditTailCommand(), newAuditQueryCommand())
	return cmd
}

// auditFilter selects records; empty fields match everything.
type auditFilter struct {
	user, object, typ, action, guard string
}

func (f auditFilter) match(r audit.Record) bool {
	obj := r.Object.String()
	return (f.user == "" || r.User == f.user || r.Manager == f.user) &&
		(f.object == "" || strings.Contains(strings.ToLower(obj), strings.ToLower(f.object))) &&
		(f.typ == "" || string(r.Type) == f.typ) &&
		(f.action == "" || r.Action == f.action) &&
		(f.guard == "" || r.Guard == f.guard)
}

func newAuditTailCommand() *cobra.Command {
	var f auditFilter
	var follow bool
	cmd := &cobra.Command{
		Use:   "tail [FILE|-]",
		Short: "Print audit records (JSON lines from --audit-file or the guard's stdout) one a line, filtered",
		Long: `tail reads audit records, one JSON object a line as the guard writes them,
from FILE or standard input, and prints those that match the filters as
  TIME TYPE ACTION USER OBJECT FIELDS (RULE: REASON)
Lines that are not audit records (other log lines) are skipped.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in := cmd.InOrStdin()
			if len(args) == 1 && args[0] != "-" {
				file, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer file.Close()
				in = file
			}
			return tailAudit(cmd.Context(), in, cmd.OutOrStdout(), f, follow)
		},
	}
	cmd.Flags().StringVar(&f.user, "user", "", "only records by this user or field manager")
	cmd.Flags().StringVar(&f.object, "object", "", "only records whose object (Kind namespace/name) contains this text")
	cmd.Flags().StringVar(&f.typ, "type", "", "only this record type: decision, drift, revert, recreate, apply, prune, error")
	cmd.Flags().StringVar(&f.action, "action", "", "only this action: deny, allow, warn, revert, created, configured, deleted, ...")
	cmd.Flags().StringVar(&f.guard, "guard", "", "only records of this Guard")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep reading as the file grows")
	return cmd
}

func tailAudit(ctx context.Context, in io.Reader, out io.Writer, f auditFilter, follow bool) error {
	r := bufio.NewReaderSize(in, 1<<20)
	var partial []byte
	for {
		line, err := r.ReadBytes('\n')
		partial = append(partial, line...)
		if err == io.EOF {
			if !follow {
				printRecordLine(out, partial, f)
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		printRecordLine(out, partial, f)
		partial = partial[:0]
	}
}

// parseRecordLine decodes one line as an audit record; ok is false for
// blank lines and lines that are not records (other log lines).
func parseRecordLine(line []byte) (rec audit.Record, ok bool) {
	if len(strings.TrimSpace(string(line))) == 0 || json.Unmarshal(line, &rec) != nil || rec.Type == "" {
		return rec, false
	}
	return rec, true
}

func printRecordLine(out io.Writer, line []byte, f auditFilter) {
	rec, ok := parseRecordLine(line)
	if !ok || !f.match(rec) {
		return
	}
	fields := make([]string, 0, len(rec.Fields))
	for _, fl := range rec.Fields {
		fields = append(fields, fmt.Sprintf("%s: %s → %s", fl.Path, jsonText(fl.Desired), jsonText(fl.Live)))
	}
	who := rec.User
	if who == "" {
		who = "-"
	}
	fmt.Fprintf(out, "%s %-8s %-10s %-16s %s", rec.Time.Local().Format("15:04:05.000"), rec.Type, orDash(rec.Action), who, rec.Object)
	if len(fields) > 0 {
		fmt.Fprintf(out, " %s", strings.Join(fields, ", "))
	}
	if rec.Reason != "" || rec.Rule != "" {
		fmt.Fprintf(out, " (%s: %s)", rec.Rule, rec.Reason)
	}
	if rec.Error != "" {
		fmt.Fprintf(out, " error: %s", rec.Error)
	}
	fmt.Fprintln(out)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
