package bench

import (
	"fmt"
	"testing"

	"github.com/driftguard/driftguard/test/bench/report"
)

// reportObjects prints one size's table and figures of BenchmarkManyObjects.
func reportObjects(b *testing.B, r objectsRun) {
	b.Helper()
	sz, n := r.size, float64(r.size.objects())
	label := fmt.Sprintf("objects: %d objects", sz.objects())
	p99 := nanOr(ms(quantile(r.revert, .99)), len(r.revert))
	fits := "?"
	if r.etcdDB > 0 {
		fits = fmt.Sprintf("%.0f", r.etcdQuota/(r.etcdDB/n))
	}
	printTable(fmt.Sprintf("BenchmarkManyObjects: %d objects (%d Guards, %d namespaces, %d files; ConfigMaps, Secrets, Services, Deployments of 0 replicas), a guard process of its own, audit sinks off, webhook not registered",
		sz.objects(), sz.guards, sz.namespaces(), r.files),
		[]string{"figure", "value", "per 1,000 objects"}, [][]string{
			{"Guards created → all Ready (s)", fmt.Sprintf("%.1f", r.ready.Seconds()), fmt.Sprintf("%.2f s", r.ready.Seconds()/n*1000)},
			{"guard RSS before the Guards / at Ready / peak (MiB)", fmt.Sprintf("%.1f / %.1f / %.1f", r.rssStart, r.rssReady, r.hwm), ""},
			{"guard heap after GC before the Guards / at Ready (MiB)", fmt.Sprintf("%.1f / %.1f", r.heapStart, r.heapReady), fmt.Sprintf("%.2f MiB added", (r.heapReady-r.heapStart)/n*1000)},
			{"kube-apiserver / etcd RSS at Ready (MiB)", fmt.Sprintf("%.0f / %.0f", r.apiRSS, r.etcdRSS), fmt.Sprintf("%.1f / %.1f MiB", r.apiRSS/n*1000, r.etcdRSS/n*1000)},
			{"etcd database / quota (MiB)", fmt.Sprintf("%.0f / %.0f", r.etcdDB/(1<<20), r.etcdQuota/(1<<20)), fmt.Sprintf("%.2f MiB", r.etcdDB/(1<<20)/n*1000)},
			{"objects of this shape the etcd quota holds (database size per object, the cluster's own included)", fits, ""},
			{"idle full reconcile of every Guard: wall (s) / guard CPU (s)", fmt.Sprintf("%.1f / %.2f", r.reconcileWall.Seconds(), r.reconcileCPU), fmt.Sprintf("%.3f s CPU", r.reconcileCPU/n*1000)},
			{"  API requests meanwhile: writes on managed kinds / others (all clients, WATCH excluded) / the guard's", fmt.Sprintf("%d / %d / %d", r.managedWrites, r.otherRequests, r.guardRequests), ""},
			{"self-heal: edits / not reverted in 10 s / refused", fmt.Sprintf("%d / %d / %d", r.edits, r.unreverted, r.editErrors), ""},
			{"self-heal: revert p50 / p99 / max (ms)", fmt.Sprintf("%s / %s / %s", fmtMS(quantile(r.revert, .5)), fmtMS(quantile(r.revert, .99)), fmtMS(quantile(r.revert, 1))), ""},
			{"  the edit's own write, sent → answered, p50 / p99 / max (ms): a revert is one more write", fmt.Sprintf("%s / %s / %s", fmtMS(quantile(r.editWrite, .5)), fmtMS(quantile(r.editWrite, .99)), fmtMS(quantile(r.editWrite, 1))), ""},
		})
	figure(b, withNote(report.NewFigure(label+": created → all Ready", r.ready.Seconds(), "s", report.AtMost, n/configSyncPerSec),
		fmt.Sprintf("%d Guards created at once; target: Config Sync's published rate, 10,000 ConfigMaps in 120 s; load %s", sz.guards, loadAvg())))
	figure(b, withNote(report.NewFigure(label+": guard peak RSS", r.hwm, "MiB", report.AtMost, objectsRSSGoal),
		fmt.Sprintf("VmHWM over the run; %.1f MiB at Ready, heap after GC %.1f MiB", r.rssReady, r.heapReady)))
	figure(b, withNote(report.NewFigure(label+": idle full reconcile CPU", r.reconcileCPU, "s", report.AtMost, objectsCPUGoal),
		fmt.Sprintf("every Guard once, asked by a push notification of the unchanged repository; %.1f s wall; the guard's idle rate subtracted", r.reconcileWall.Seconds())))
	figure(b, withNote(report.NewFigure(label+": idle full reconcile writes", float64(r.managedWrites), "calls", report.AtMost, 0),
		fmt.Sprintf("writes on namespaces, ConfigMaps, Secrets, Services, Deployments at the API server, all clients; %d other requests, %d by the guard", r.otherRequests, r.guardRequests)))
	figure(b, withNote(report.NewFigure(label+": self-heal revert p99", p99, "ms", report.AtMost, objectsRevertGoal),
		fmt.Sprintf("%d edits at %.0f/s over the ConfigMaps of %d namespaces, webhook off", r.edits, objectsEditRate, sz.guards)))
	figure(b, withNote(report.NewFigure(label+": self-heal edits not reverted in 10 s", float64(r.unreverted+r.editErrors), "edits", report.AtMost, 0),
		fmt.Sprintf("%d edits", r.edits)))
	b.ReportMetric(r.ready.Seconds(), fmt.Sprintf("ready-%d-s", sz.objects()))
	b.ReportMetric(r.hwm, fmt.Sprintf("rss-%d-MiB", sz.objects()))
}

// reportObjectsGrowth prints the per-object figures of the smallest and
// the largest size and their ratios: linear growth or better is at most 1.
func reportObjectsGrowth(b *testing.B, a, z objectsRun) {
	b.Helper()
	if a.size == z.size {
		return
	}
	na, nz := float64(a.size.objects()), float64(z.size.objects())
	step := fmt.Sprintf("%d_to_%d", a.size.objects(), z.size.objects())
	per := func(name, unit string, va, vz float64) {
		pa, pz := va/na*1000, vz/nz*1000
		figure(b, withNote(report.NewFigure("objects: "+name+" per object, growth "+step, ratio(pz, pa), "x", report.AtMost, 1),
			fmt.Sprintf("per 1,000 objects: %.3g %s at %d, %.3g %s at %d; at most 1 is linear or better", pa, unit, a.size.objects(), pz, unit, z.size.objects())))
	}
	per("created → all Ready", "s", a.ready.Seconds(), z.ready.Seconds())
	per("heap added", "MiB", a.heapReady-a.heapStart, z.heapReady-z.heapStart)
	per("idle full reconcile CPU", "s", a.reconcileCPU, z.reconcileCPU)
}
