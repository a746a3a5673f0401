package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
)

type reconcileOptions struct {
	clusterOptions
	withSource bool
	timeout    time.Duration
}

func newReconcileCommand() *cobra.Command {
	o := &reconcileOptions{}
	cmd := guardVerb("reconcile", "Reconcile a Guard now and wait for the result",
		`reconcile guard NAME asks the guard to reconcile a Guard now rather than at
its next interval: fetch its source, apply the newest revision that its
sync mode and sync windows let through, revert drift. It sets the
annotation driftguard.io/reconcile-requested on the Guard to the current
time, waits until the guard records that request as handled in
status.lastHandledReconcileAt, and prints the revision in force and the
Ready condition. The exit code is 1 when the Guard is not Ready then.

A reconcile is not an approval: a Guard with spec.sync: manual, or a
closed sync window, still holds a new revision (driftguard sync does
approve). A suspended Guard is refused: resume it (driftguard resume).

Every reconcile fetches the Guard's source (the source is part of the
Guard); --with-source also fetches and renders a revision the status
records as failed to render (status.renderFailure) without waiting for
its backoff.`,
		`  driftguard reconcile guard shop
  driftguard reconcile guard shop --with-source --timeout 5m`,
		&o.clusterOptions,
		func(cmd *cobra.Command, names []string) error {
			r := reconcileRun{withSource: o.withSource, refuseSuspended: true, wait: true, timeout: o.timeout}
			return r.each(cmd, &o.clusterOptions, names, "reconcile of guard %s requested (%s)")
		})
	sub := cmd.Commands()[0]
	o.bind(sub, false)
	sub.Flags().BoolVar(&o.withSource, "with-source", false, "also fetch and render a revision that failed to render before its backoff has passed")
	sub.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the guard to handle the request")
	return cmd
}

type suspendOptions struct {
	clusterOptions
	wait    bool
	timeout time.Duration
}

func newSuspendCommand() *cobra.Command {
	o := &suspendOptions{}
	cmd := guardVerb("suspend", "Stop reconciling a Guard and reverting its drift",
		`suspend guard NAME sets spec.suspend: true. The guard then neither
reconciles the Guard (no fetch, no apply, no prune) nor reverts its
drift, as Flux does; the revision applied last stays in force, and
changes people make stay until the Guard is resumed. The admission
webhook keeps applying spec.enforcement (set enforcement: dryrun as well
to let people change the objects meanwhile). The Guard's status says so:
the condition Suspended is True.`,
		`  driftguard suspend guard shop`,
		&o.clusterOptions,
		func(cmd *cobra.Command, names []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			for _, name := range names {
				if err := patchSuspend(cmd, c, name); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "guard %s suspended: not reconciled, drift not reverted until driftguard resume guard %s\n", name, name)
			}
			return nil
		})
	o.bind(cmd.Commands()[0], false)
	return cmd
}

func patchSuspend(cmd *cobra.Command, c client.Client, name string) error {
	g := &v1alpha1.Guard{}
	g.Name = name
	if err := c.Patch(cmd.Context(), g, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))); err != nil {
		return fmt.Errorf("guard %s: %w", name, err)
	}
	return nil
}

func newResumeCommand() *cobra.Command {
	o := &suspendOptions{}
	cmd := guardVerb("resume", "Resume a suspended Guard, reconcile it and wait for the result",
		`resume guard NAME sets spec.suspend: false and, in the same patch, asks for
a reconcile (driftguard.io/reconcile-requested); it waits until the guard
handled that request and prints the revision in force and the Ready
condition, as reconcile does (--wait=false returns at once). Drift made
while the Guard was suspended is reverted by that reconcile.`,
		`  driftguard resume guard shop`,
		&o.clusterOptions,
		func(cmd *cobra.Command, names []string) error {
			r := reconcileRun{spec: map[string]any{"suspend": false}, wait: o.wait, timeout: o.timeout}
			return r.each(cmd, &o.clusterOptions, names, "guard %s resumed (reconcile requested %s)")
		})
	sub := cmd.Commands()[0]
	o.bind(sub, false)
	sub.Flags().BoolVar(&o.wait, "wait", true, "wait until the guard reconciled the resumed Guard")
	sub.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait")
	return cmd
}

// reconcileRun asks the guard to reconcile Guards, one request each, and
// waits for each to be handled: what reconcile and resume share.
type reconcileRun struct {
	// withSource also fetches a revision that failed to render.
	withSource bool
	// spec is merged into the request's patch (resume: suspend false).
	spec map[string]any
	// refuseSuspended refuses a suspended Guard before asking.
	refuseSuspended bool
	// wait waits until the guard handled each request, at most timeout,
	// and prints the result.
	wait    bool
	timeout time.Duration
}

// each runs r for the Guards named, in order, and prints requested (a
// format of the Guard's name and the request) once each request is made;
// the exit code is 1 when one of them is not Ready once its request is
// handled.
func (r reconcileRun) each(cmd *cobra.Command, o *clusterOptions, names []string, requested string) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, out := cmd.Context(), cmd.OutOrStdout()
	allReady := true
	for _, name := range names {
		if r.refuseSuspended {
			var g v1alpha1.Guard
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &g); err != nil {
				return fmt.Errorf("guard %s: %w", name, err)
			}
			if g.Spec.Suspend {
				return fmt.Errorf("guard %s is suspended: resume it first (driftguard resume guard %s)", name, name)
			}
		}
		request, err := requestReconcile(ctx, c, name, r.withSource, r.spec)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, requested+"\n", name, request)
		if !r.wait {
			continue
		}
		done, err := waitReconciled(ctx, c, name, request, r.timeout)
		if err != nil {
			return err
		}
		allReady = printResult(out, done) && allReady
	}
	if !allReady {
		return exitCode(1)
	}
	return nil
}
