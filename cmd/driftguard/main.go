// Command driftguard keeps a Kubernetes cluster equal to a Git repository.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // sync windows name IANA time zones; the image has no zoneinfo
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCommand().ExecuteContext(ctx)
	var ec exitCode
	switch {
	case errors.As(err, &ec):
		os.Exit(int(ec))
	case err != nil:
		fmt.Fprintln(os.Stderr, "driftguard:", err)
		os.Exit(1)
	}
}

// exitCode ends the command with a status and no further message (for
// commands whose output already said what happened).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
