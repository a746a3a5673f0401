package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/driftguard/driftguard/receiver"
)

// Bounds of the push receiver's HTTP server. The handler bounds the body
// (receiver.DefaultReadTimeout, receiver.MaxPushBody).
const (
	receiverHeaderTimeout = 5 * time.Second
	receiverReadTimeout   = receiver.DefaultReadTimeout + receiverHeaderTimeout
	receiverWriteTimeout  = 10 * time.Second
	receiverIdleTimeout   = 60 * time.Second
	receiverMaxHeader     = 64 << 10
)

// addReceiver serves the Git push receiver on o.ReceiverAddr, on every
// replica, when it is set. Without a token it refuses every push unless
// o.ReceiverAllowUnauthenticated says otherwise; start-up says so.
func addReceiver(mgr manager.Manager, o Options, onPush func(ctx context.Context, urls []string), log logr.Logger) error {
	if o.ReceiverAddr == "" {
		return nil
	}
	log = log.WithName("receiver")
	switch {
	case o.ReceiverToken == "" && o.ReceiverAllowUnauthenticated:
		log.Info("the push receiver has no token and accepts every push (--receiver-allow-unauthenticated)")
	case o.ReceiverToken == "":
		log.Error(errors.New("no --receiver-token"), "the push receiver refuses every push: set --receiver-token (or $DRIFTGUARD_RECEIVER_TOKEN), or --receiver-allow-unauthenticated")
	}
	receiver := &receiver.Receiver{
		Token: o.ReceiverToken, AllowUnauthenticated: o.ReceiverAllowUnauthenticated, Log: log,
		OnPush: func(urls []string) { onPush(context.Background(), urls) },
	}
	return mgr.Add(receiverServer(o.ReceiverAddr, "/hook", receiver, log))
}

// receiverServer serves h at path on addr until the manager stops, with
// every timeout of an HTTP server set: a client cannot hold a connection
// by trickling headers or a body, or by idling.
func receiverServer(addr, path string, h http.Handler, log logr.Logger) manager.Runnable {
	return nonLeader(func(ctx context.Context) error {
		mux := http.NewServeMux()
		mux.Handle(path, h)
		srv := &http.Server{
			Addr: addr, Handler: mux,
			ReadHeaderTimeout: receiverHeaderTimeout, ReadTimeout: receiverReadTimeout,
			WriteTimeout: receiverWriteTimeout, IdleTimeout: receiverIdleTimeout,
			MaxHeaderBytes: receiverMaxHeader,
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", addr, err)
		}
		log.Info("serving", "addr", ln.Addr().String(), "path", path)
		go func() {
			<-ctx.Done()
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown)
		}()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
}
