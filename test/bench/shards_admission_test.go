package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftguard/driftguard/test/bench/report"
)

// shardEdit is one edit of a managed Deployment by alice, whom the guards
// do not allow.
type shardEdit struct {
	owner    string   // the shard of the object's Guard
	up       []string // the shards running
	denied   bool
	message  string
	answered map[string]float64 // admission reviews each running shard answered meanwhile
	deniedBy map[string]float64 // and denied
}

func (e shardEdit) String() string {
	return fmt.Sprintf("shard %s's object with %s up: %s (reviews answered %v, denied %v) %s", e.owner, strings.Join(e.up, "+"), e.verdict(), e.answered, e.deniedBy, e.message)
}

// edit patches the Deployment of Guard g as alice and reads the running
// shards' webhook counters around it.
func (f *shardFleet) edit(ctx context.Context, g int) shardEdit {
	e := shardEdit{owner: f.shardOf(g), answered: map[string]float64{}, deniedBy: map[string]float64{}}
	for _, s := range shardNames {
		if f.procs[s] != nil {
			e.up = append(e.up, s)
		}
	}
	read := func(sign float64) {
		for _, s := range e.up {
			n, _ := f.procs[s].Metric("driftguard_webhook_requests_total")
			d, _ := f.procs[s].Metric("driftguard_admission_denied_total")
			e.answered[s] += sign * n
			e.deniedBy[s] += sign * d
		}
	}
	read(-1)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"fleet/generation":"edited-%d"}}}`, time.Now().UnixNano())
	_, err := f.alice.AppsV1().Deployments(shardsNS).Patch(ctx, f.guardName(g), types.MergePatchType, patch, metav1.PatchOptions{})
	time.Sleep(200 * time.Millisecond) // a webhook counts an answer after writing it
	read(1)
	if err != nil {
		e.denied, e.message = true, err.Error()
	}
	return e
}

// stop stops shard s's process.
func (f *shardFleet) stop(s string) error {
	g := f.procs[s]
	delete(f.procs, s)
	return g.Stop()
}

// restart starts shard s again and waits until it has reconciled each of
// its Guards once and re-registered its webhook at its new address.
func (f *shardFleet) restart(ctx context.Context, s string) error {
	name := "driftguard-" + s
	old, err := f.p.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	oldURL := webhookURL(old.Webhooks[0].ClientConfig.URL)
	if err := f.start(ctx, s); err != nil {
		return err
	}
	g := f.procs[s]
	return waitGone(10*time.Minute, "of shard "+s+"'s Guards not reconciled since its restart, or its old webhook address", func() (int, error) {
		synced, err := guardMetricByLabel(g, "driftguard_sync_total", "guard")
		if err != nil {
			return 0, err
		}
		left := f.guards/len(shardNames) - len(synced)
		cur, err := f.p.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil || webhookURL(cur.Webhooks[0].ClientConfig.URL) == oldURL {
			left++
		}
		return max(0, left), nil
	})
}

func webhookURL(u *string) string {
	if u == nil {
		return ""
	}
	return *u
}

// admission edits a managed object of each shard with both shards up, then
// with only its own shard up (and one of the other shard, logged), and
// reports whether each was denied and who answered.
func (f *shardFleet) admission(b *testing.B, ctx context.Context) {
	b.Helper()
	owned := []shardEdit{f.edit(ctx, 0), f.edit(ctx, 1)} // both up
	var others []shardEdit
	if err := f.stop("b"); err != nil {
		b.Fatal(err)
	}
	owned = append(owned, f.edit(ctx, 0))
	others = append(others, f.edit(ctx, 1))
	if err := f.restart(ctx, "b"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the API server's webhook informer sees the new address
	if err := f.stop("a"); err != nil {
		b.Fatal(err)
	}
	owned = append(owned, f.edit(ctx, 1))
	others = append(others, f.edit(ctx, 0))
	var rows [][]string
	for _, e := range slices.Concat(owned, others) {
		b.Logf("edit of %s", e)
		rows = append(rows, []string{e.owner, strings.Join(e.up, "+"), e.verdict(), fmt.Sprint(e.answered), fmt.Sprint(e.deniedBy)})
	}
	printTable("BenchmarkShards: an edit of a managed Deployment by alice (not a guard user), failure policy Ignore",
		[]string{"object's shard", "shards up", "edit", "reviews answered", "denied by"}, rows)
	admitted, byOwner, byOther := 0, map[string]float64{}, 0.0
	for _, e := range owned {
		if !e.denied {
			admitted++
		}
		for s, n := range e.deniedBy {
			if s == e.owner {
				byOwner[s] += n
			} else {
				byOther += n
			}
		}
	}
	for _, s := range shardNames {
		figure(b, withNote(report.NewFigure(fmt.Sprintf("shards: shard %s: edits of its objects it denied", s), byOwner[s], "edits", report.ExactlyN, 2),
			fmt.Sprintf("driftguard_admission_denied_total of shard %s around an edit of its object with both shards up, then with it alone", s)))
	}
	figure(b, withNote(report.NewFigure("shards: edits denied by the shard that does not manage the object", byOther, "edits", report.AtMost, 0),
		"a webhook admits what its shard does not manage; the API server stops at the first denial, so with both up the other shard may not be asked at all"))
	figure(b, withNote(report.NewFigure("shards: edits of a managed object admitted while its own shard was up", float64(admitted), "edits", report.AtMost, 0),
		fmt.Sprintf("%d edits: each shard's object with both up and with only its own shard up; with only the other shard up: %s; %s", len(owned), others[0].verdict(), others[1].verdict())))
}

func (e shardEdit) verdict() string {
	if e.denied {
		return "denied"
	}
	return "admitted"
}
