package receiver

import (
	dlist "container/list"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
)

// deliveryHeaders carry the ID a Git host gives each delivery of a webhook;
// a redelivery or a replay carries the same one.
var deliveryHeaders = []string{
	"X-GitHub-Delivery",
	"X-Gitlab-Event-UUID",
	"X-Gitea-Delivery",
	"X-Gogs-Delivery",
}

// maxDeliveryID bounds the length of a delivery ID kept (a UUID is 36).
const maxDeliveryID = 128

// deliveryKeys returns what identifies a delivery: its delivery ID header,
// and the signature it was authenticated with. The ID header is not
// covered by the signature, so a replayed signed body with a new ID is
// still recognised by its signature (two pushes never have the same body:
// it names the commits).
func deliveryKeys(h http.Header, signature []byte) []string {
	var keys []string
	for _, name := range deliveryHeaders {
		if v := strings.TrimSpace(h.Get(name)); v != "" {
			keys = append(keys, name+" "+v[:min(len(v), maxDeliveryID)])
			break
		}
	}
	if signature != nil {
		keys = append(keys, "signature "+hex.EncodeToString(signature))
	}
	return keys
}

// deliveries remembers the keys of handled deliveries for a window, at most
// size of them, forgetting the oldest first. It is safe for concurrent use.
type deliveries struct {
	mu     sync.Mutex
	window time.Duration
	size   int
	order  *dlist.List               // of *delivery, oldest first
	byKey  map[string]*dlist.Element // key -> its element in order
}

type delivery struct {
	key string
	at  time.Time
}

func newDeliveries(window time.Duration, size int) *deliveries {
	return &deliveries{window: window, size: size, order: dlist.New(), byKey: map[string]*dlist.Element{}}
}

// seenBefore reports whether any of keys was handled within the window
// before now; if none was, it remembers them all as handled now.
func (d *deliveries) seenBefore(keys []string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for e := d.order.Front(); e != nil && now.Sub(e.Value.(*delivery).at) >= d.window; e = d.order.Front() {
		d.forget(e)
	}
	for _, k := range keys {
		if _, ok := d.byKey[k]; ok {
			return true
		}
	}
	for _, k := range keys {
		d.byKey[k] = d.order.PushBack(&delivery{key: k, at: now})
	}
	for d.order.Len() > d.size {
		d.forget(d.order.Front())
	}
	return false
}

func (d *deliveries) forget(e *dlist.Element) {
	delete(d.byKey, e.Value.(*delivery).key)
	d.order.Remove(e)
}
