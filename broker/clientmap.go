package broker

import (
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
)

// clientMap holds a value per connected client. It replaces a sync.Map
// (issue 19): at 10,000 devices a sync.Map's trie nodes held ~100 bytes an
// entry, a map of pointers ~25 (TestClientMapIsCompact). Readers take the
// read lock only for a lookup; nothing runs under the lock but the map
// operation itself (STYLE.md §5), so each cannot call back into the map.
type clientMap[V any] struct {
	mu sync.RWMutex
	m  map[*mqtt.Client]V
}

// load returns cl's value and whether it has one.
func (c *clientMap[V]) load(cl *mqtt.Client) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[cl]
	return v, ok
}

// store sets cl's value.
func (c *clientMap[V]) store(cl *mqtt.Client, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[*mqtt.Client]V)
	}
	c.m[cl] = v
}

// remove forgets cl and returns the value it had, if any.
func (c *clientMap[V]) remove(cl *mqtt.Client) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[cl]
	delete(c.m, cl)
	return v, ok
}

// each calls f with every client and its value, from a copy taken under
// the read lock: f runs without the lock and may use the map.
func (c *clientMap[V]) each(f func(*mqtt.Client, V)) {
	type entry struct {
		cl *mqtt.Client
		v  V
	}
	c.mu.RLock()
	all := make([]entry, 0, len(c.m))
	for cl, v := range c.m {
		all = append(all, entry{cl, v})
	}
	c.mu.RUnlock()
	for _, e := range all {
		f(e.cl, e.v)
	}
}

// len returns the number of clients held.
func (c *clientMap[V]) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
