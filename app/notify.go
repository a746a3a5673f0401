package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driftguard/driftguard/notify"
)

// notifySecrets splits --notify-secret: one Secret name, or several
// separated by commas, each a provider of its own.
func notifySecrets(flag string) []string {
	var out []string
	for _, n := range strings.Split(flag, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// notifyConfig returns a function reading a notification Secret (its
// provider, address, token, keys), read again at most once a minute so
// that a rotated token or a new address needs no restart. Errors name the
// Secret and the key, never a value.
func notifyConfig(c client.Reader, namespace, name string) func(ctx context.Context) (notify.Config, error) {
	var (
		mu    sync.Mutex
		value notify.Config
		err   error
		read  time.Time
	)
	return func(ctx context.Context) (notify.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		if !read.IsZero() && time.Since(read) < time.Minute {
			return value, err
		}
		read = time.Now()
		var s corev1.Secret
		if gerr := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); gerr != nil {
			value, err = notify.Config{}, fmt.Errorf("--notify-secret: secret %s/%s: %w", namespace, name, gerr)
			return value, err
		}
		value, err = notify.ConfigFrom(s.Data)
		if err != nil {
			err = fmt.Errorf("--notify-secret: secret %s/%s: %w", namespace, name, err)
		}
		return value, err
	}
}
