package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/driftguard/driftguard/audit"
	"github.com/driftguard/driftguard/decision"
	"github.com/driftguard/driftguard/policy"
)

func newPolicyReplayCommand() *cobra.Command {
	var auditFile, dir string
	var cfg policy.Config
	cmd := &cobra.Command{
		Use:   "replay --audit FILE --policy DIR",
		Short: "Re-decide recorded admission requests with a new policy; print every decision that would change",
		Long: `replay reads the decision records of an audit log (JSON lines, as --audit-file
or the guard's stdout writes them; "-" is standard input), decides each
recorded policy input again with the policy in DIR, and prints the requests
whose action or rule would change:
  TIME USER OPERATION OBJECT  OLD-ACTION(rule) -> NEW-ACTION(rule)  reason
Records carry the input without the object bodies (object, oldObject,
desired): a rule that reads those sees them absent. Pass the guard's
--guard-users and --break-glass-groups so the policy sees the same config.

The API server's own audit log (audit.k8s.io/v1 events, JSON lines) may be
given too, or mixed in: the denials and warnings of the compiled admission
policies (--admission-mode both or compiled), which never reach the guard,
are replayed from it with the input its message tells (who, the operation,
the object, the top-level fields changed, where Git has the object; no
values, no annotations).
Exit code 1 when any decision changes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if auditFile == "" || dir == "" {
				return fmt.Errorf("--audit and --policy are required")
			}
			in := cmd.InOrStdin()
			if auditFile != "-" {
				f, err := os.Open(auditFile)
				if err != nil {
					return err
				}
				defer f.Close()
				in = f
			}
			e := policy.NewEngine(cfg, logr.Discard())
			if err := e.LoadDir(dir); err != nil {
				return err
			}
			st, err := replay(cmd.Context(), e, in, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d decisions replayed, %d would change, %d records without a recorded input skipped", st.replayed, st.changed, st.skipped)
			if st.off > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), ", %d decided by enforcement off in Git skipped", st.off)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			if st.changed > 0 {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&auditFile, "audit", "", "audit log to replay (JSON lines; - for standard input)")
	cmd.Flags().StringVar(&dir, "policy", "", "folder of the new policy's Rego files")
	cmd.Flags().StringSliceVar(&cfg.GuardUsers, "guard-users", nil, "the guard's identities, as the guard was run with")
	cmd.Flags().StringSliceVar(&cfg.BreakGlassGroups, "break-glass-groups", nil, "break-glass groups, as the guard was run with")
	return cmd
}

// replayStats counts the records replayed, those whose decision changes,
// those without a recorded input, and those decided by enforcement off in
// Git (the policy was not asked).
type replayStats struct{ replayed, changed, skipped, off int }

// replay decides every decision record's input again and writes the ones
// whose outcome changes. Lines that are not audit records are skipped.
func replay(ctx context.Context, e *policy.Engine, r io.Reader, w io.Writer) (replayStats, error) {
	var st replayStats
	m := decision.New(e, nil)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		rec, ok := parseRecordLine(sc.Bytes())
		if !ok {
			rec, ok = apiServerDecision(sc.Bytes())
		}
		if !ok || rec.Type != audit.Decision {
			continue
		}
		if len(rec.PolicyInput) == 0 {
			st.skipped++
			continue
		}
		var in policy.Input
		dec := json.NewDecoder(strings.NewReader(string(rec.PolicyInput)))
		dec.UseNumber()
		if err := dec.Decode(&in); err != nil {
			return st, fmt.Errorf("line %d: policyInput: %w", line, err)
		}
		if rec.Rule == decision.RuleEnforcementOff {
			st.off++ // decided by the annotation in Git, not by the policy
			continue
		}
		r, err := m.DecideInput(ctx, in, decision.EnforcementOf(in))
		if err != nil {
			return st, fmt.Errorf("line %d: decide %s: %w", line, rec.Object, err)
		}
		st.replayed++
		// Compared is what the policy said, before enforcement changed it.
		oldAction, newAction := rec.Action, string(r.Action)
		if rec.PolicyAction != "" {
			oldAction = rec.PolicyAction
		}
		if r.PolicyAction != "" {
			newAction = string(r.PolicyAction)
		}
		if newAction == oldAction && r.Rule == rec.Rule {
			continue
		}
		st.changed++
		fmt.Fprintf(w, "%s %s %s %s  %s(%s) -> %s(%s)  %s\n", rec.Time.UTC().Format("2006-01-02T15:04:05Z"), rec.User, rec.Operation, rec.Object,
			oldAction, rec.Rule, newAction, r.Rule, r.Reason)
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("read audit log: %w", err)
	}
	return st, nil
}
