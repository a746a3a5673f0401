package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretValue returns a function reading one key of a Secret, read again
// at most once a minute, so that a rotated value is picked up without a
// restart and a burst of calls costs one request.
func secretValue(c client.Reader, namespace, name, key string) func(ctx context.Context) (string, error) {
	var (
		mu    sync.Mutex
		value string
		err   error
		read  time.Time
	)
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if !read.IsZero() && time.Since(read) < time.Minute {
			return value, err
		}
		read = time.Now()
		var s corev1.Secret
		if gerr := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); gerr != nil {
			value, err = "", fmt.Errorf("secret %s/%s: %w", namespace, name, gerr)
			return value, err
		}
		v, ok := s.Data[key]
		if !ok {
			value, err = "", fmt.Errorf("secret %s/%s has no key %q", namespace, name, key)
			return value, err
		}
		value, err = strings.TrimSpace(string(v)), nil
		return value, err
	}
}
