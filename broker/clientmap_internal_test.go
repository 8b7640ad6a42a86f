package broker

import (
	"runtime"
	"sync"
	"testing"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/chorus-edge/chorus/gateway/heapcost"
)

func TestClientMap(t *testing.T) {
	srv := mqtt.New(nil)
	a := srv.NewClient(nil, "t", "a", false)
	b := srv.NewClient(nil, "t", "b", false)
	var m clientMap[int]
	if _, ok := m.load(a); ok || m.len() != 0 {
		t.Fatal("an empty map holds a value")
	}
	if _, ok := m.remove(a); ok {
		t.Fatal("remove from an empty map reported a value")
	}
	m.store(a, 1)
	m.store(b, 2)
	m.store(a, 3)
	if v, ok := m.load(a); !ok || v != 3 {
		t.Fatalf("load(a) = %d %v, want 3 true", v, ok)
	}
	seen := map[*mqtt.Client]int{}
	m.each(func(cl *mqtt.Client, v int) {
		seen[cl] = v
		m.remove(cl) // f runs without the lock
	})
	if len(seen) != 2 || seen[a] != 3 || seen[b] != 2 {
		t.Fatalf("each saw %v, want a:3 b:2", seen)
	}
	if m.len() != 0 {
		t.Fatalf("len after removing all = %d, want 0", m.len())
	}
}

// TestClientMapIsCompact bounds the bytes a connection's entry costs in the
// policy's sessions and the store's kinds (two per connected device); the
// sync.Map they replace held ~100 (its trie's entry and indirect nodes).
func TestClientMapIsCompact(t *testing.T) {
	srv := mqtt.New(nil)
	const n = 10000
	clients := make([]*mqtt.Client, n)
	for i := range clients {
		clients[i] = srv.NewClient(nil, "t", "c", false)
	}
	s := &session{}
	var m clientMap[*session]
	per := heapcost.PerObject(n, func() {
		for _, cl := range clients {
			m.store(cl, s)
		}
	})
	var old sync.Map
	perOld := heapcost.PerObject(n, func() {
		for _, cl := range clients {
			old.Store(cl, s)
		}
	})
	t.Logf("client map: %.0f bytes an entry (sync.Map %.0f)", per, perOld)
	if per > 48 {
		t.Fatalf("client map holds %.0f bytes an entry, want at most 48", per)
	}
	runtime.KeepAlive(&m)
	runtime.KeepAlive(&old)
	runtime.KeepAlive(clients)
}
