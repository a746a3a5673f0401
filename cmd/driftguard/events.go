package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/api/v1alpha1"
	"github.com/driftguard/driftguard/reconcile"
	"github.com/driftguard/driftguard/render"
)

type eventsOptions struct {
	clusterOptions
	forObject string
	types     []string
}

func newEventsCommand() *cobra.Command {
	o := &eventsOptions{}
	cmd := &cobra.Command{
		Use:   "events [--for guard/NAME]",
		Short: "Print the Kubernetes Events of Guards and of the objects they manage",
		Long: `events prints the Kubernetes Events (events.k8s.io) about Guards and about
the objects in their inventories (the guard's drift, revert and denial
Events, and those other controllers make about the same objects: a
Deployment scaled, a Pod failing), oldest first: when last seen, type,
reason, object and message. --for guard/NAME keeps those of one Guard and
its objects. The inventories are read from the guard's namespace (-n).`,
		Example: `  driftguard events --for guard/shop
  driftguard events --types Warning`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runEvents(cmd.Context(), cmd.OutOrStdout(), o, time.Now())
		},
	}
	o.bind(cmd, true)
	cmd.Flags().StringVar(&o.forObject, "for", "", "only the Events of this Guard and its objects: guard/NAME")
	cmd.Flags().StringSliceVar(&o.types, "types", nil, "only Events of these types (Normal, Warning)")
	_ = cmd.RegisterFlagCompletionFunc("for", func(_ *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, n := range o.guardNames(strings.TrimPrefix(prefix, "guard/")) {
			out = append(out, "guard/"+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// eventSubjects are the objects whose Events are printed, by the Guard
// they belong to.
type eventSubjects struct {
	guards  map[string]bool
	objects map[render.ObjectKey]string
}

func (s eventSubjects) match(ref corev1.ObjectReference) (string, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", false
	}
	if gv.Group == v1alpha1.GroupVersion.Group && ref.Kind == "Guard" {
		return ref.Name, s.guards[ref.Name]
	}
	g, ok := s.objects[render.ObjectKey{Group: gv.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}]
	return g, ok
}

func runEvents(ctx context.Context, out io.Writer, o *eventsOptions, now time.Time) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	var guards []v1alpha1.Guard
	if o.forObject != "" {
		kind, name, ok := strings.Cut(o.forObject, "/")
		if !ok || name == "" || (kind != "guard" && kind != "Guard" && kind != "guards") {
			return fmt.Errorf("--for %q: want guard/NAME", o.forObject)
		}
		var g v1alpha1.Guard
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &g); err != nil {
			return fmt.Errorf("--for %s: %w", o.forObject, err)
		}
		guards = append(guards, g)
	} else {
		var list v1alpha1.GuardList
		if err := c.List(ctx, &list); err != nil {
			return fmt.Errorf("list guards: %w", err)
		}
		guards = list.Items
	}
	subjects, err := inventoriesOf(ctx, c, o.namespace, guards)
	if err != nil {
		return err
	}
	var list eventsv1.EventList
	if err := c.List(ctx, &list); err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	events := filterEvents(list.Items, subjects, o.types)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	for _, e := range events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", duration.HumanDuration(now.Sub(eventTime(&e))), e.Type, e.Reason, eventObject(e.Regarding), strings.ReplaceAll(e.Note, "\n", " "))
	}
	return tw.Flush()
}

// inventoriesOf reads the inventories of guards from the guard's namespace.
func inventoriesOf(ctx context.Context, c client.Client, ns string, guards []v1alpha1.Guard) (eventSubjects, error) {
	s := eventSubjects{guards: map[string]bool{}, objects: map[render.ObjectKey]string{}}
	store := &reconcile.InventoryStore{Client: c, Namespace: ns, Log: logr.Discard()}
	for i := range guards {
		g := &guards[i]
		s.guards[g.Name] = true
		inv, err := store.Load(ctx, g)
		if err != nil && !apierrors.IsNotFound(err) {
			return s, err
		}
		for _, k := range inv.Keys() {
			s.objects[k] = g.Name
		}
	}
	return s, nil
}

// filterEvents keeps the Events about subjects (of types, when given),
// oldest first.
func filterEvents(all []eventsv1.Event, subjects eventSubjects, types []string) []eventsv1.Event {
	var out []eventsv1.Event
	for _, e := range all {
		if _, ok := subjects.match(e.Regarding); !ok {
			continue
		}
		if len(types) > 0 && !containsFold(types, e.Type) {
			continue
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(&out[i]).Before(eventTime(&out[j])) })
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// eventTime is when an Event was last seen: its series' last observation,
// its eventTime, the deprecated last timestamp (core/v1 writers), or its
// creation.
func eventTime(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.DeprecatedLastTimestamp.IsZero():
		return e.DeprecatedLastTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// eventObject names the object of an Event: Kind/namespace/name.
func eventObject(ref corev1.ObjectReference) string {
	if ref.Namespace == "" {
		return ref.Kind + "/" + ref.Name
	}
	return ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}
