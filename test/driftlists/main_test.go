// Package driftlists checks the drift comparison against a real API server:
// list semantics from the server's OpenAPI, null against empty values.
package driftlists

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/app"
	"github.com/driftguard/driftguard/devenv"
	"github.com/driftguard/driftguard/test/wait"
)

var (
	admin client.Client
	disc  discovery.DiscoveryInterface
	cfg   *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	cluster, err := devenv.Start(ctx, devenv.Options{CRDDirs: []string{"testdata"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start cluster:", err)
		return 1
	}
	defer func() { _ = cluster.Stop() }()
	cfg = cluster.Config
	if admin, err = client.New(cluster.Config, client.Options{Scheme: app.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		return 1
	}
	if disc, err = discovery.NewDiscoveryClientForConfig(cluster.Config); err != nil {
		fmt.Fprintln(os.Stderr, "discovery:", err)
		return 1
	}
	// The API server publishes a new CRD's OpenAPI a moment after it
	// serves the kind; the tests start once it has.
	if err := wait.Until(time.Minute, func() error {
		paths, err := disc.OpenAPIV3().Paths()
		if _, ok := paths["apis/lists.driftguard.io/v1"]; !ok && err == nil {
			return fmt.Errorf("not among %d paths", len(paths))
		}
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "the OpenAPI of lists.driftguard.io/v1 was not published:", err)
		return 1
	}
	return m.Run()
}
