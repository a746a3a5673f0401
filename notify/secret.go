package notify

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretReread is how long a notification Secret's content is kept before
// it is read again.
const secretReread = time.Minute

// SecretConfig returns a function reading the notification Secret
// namespace/name (its provider, address, token, keys) through c, read again
// at most once a minute so that a rotated token or a new address needs no
// restart: a Sink's Config. Errors name the Secret and the key, never a
// value.
func SecretConfig(c client.Reader, namespace, name string) func(ctx context.Context) (Config, error) {
	var (
		mu    sync.Mutex
		value Config
		err   error
		read  time.Time
	)
	return func(ctx context.Context) (Config, error) {
		mu.Lock()
		defer mu.Unlock()
		if !read.IsZero() && time.Since(read) < secretReread {
			return value, err
		}
		read = time.Now()
		var s corev1.Secret
		if gerr := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); gerr != nil {
			value, err = Config{}, fmt.Errorf("--notify-secret: secret %s/%s: %w", namespace, name, gerr)
			return value, err
		}
		value, err = ConfigFrom(s.Data)
		if err != nil {
			err = fmt.Errorf("--notify-secret: secret %s/%s: %w", namespace, name, err)
		}
		return value, err
	}
}
