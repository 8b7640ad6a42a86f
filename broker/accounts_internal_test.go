package broker

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"

	"github.com/chorus-edge/chorus/gateway/heapcost"
)

// TestAccountStateIsCompact: a device account with one live connection holds
// it in a slice of one, not a map (accounts.go, accountState.conns), and the
// limit, leave, sweep and presence behave as before.
func TestAccountStateIsCompact(t *testing.T) {
	srv := mqtt.New(nil)
	as := &accounts{byName: map[string]*accountState{}}
	noBucket := func() *bucket { return nil }

	a := srv.NewClient(nil, "t", "dev-1", false)
	b := srv.NewClient(nil, "t", "dev-1b", false)
	if _, live, ok := as.join("dev-1", a, "dev-1", 1, noBucket); !ok || live != 0 {
		t.Fatalf("first join: ok %v live %d, want true 0", ok, live)
	}
	if _, live, ok := as.join("dev-1", a, "dev-1", 1, noBucket); !ok || live != 0 {
		t.Fatalf("join again of the same client: ok %v live %d, want true 0", ok, live)
	}
	if as.live("dev-1") != 1 {
		t.Fatalf("live after joining one client twice = %d, want 1", as.live("dev-1"))
	}
	if _, live, ok := as.join("dev-1", b, "dev-1b", 1, noBucket); ok || live != 1 {
		t.Fatalf("join over the limit: ok %v live %d, want false 1", ok, live)
	}
	as.leave("dev-1", a)
	if as.live("dev-1") != 0 {
		t.Fatalf("live after leave = %d, want 0", as.live("dev-1"))
	}
	if _, _, ok := as.join("dev-1", b, "dev-1b", 1, noBucket); !ok {
		t.Fatal("join after the first left was refused")
	}
	b.Stop(nil) // closed without a disconnect event
	as.sweep(time.Now())
	if as.len() != 0 {
		t.Fatalf("accounts after sweeping a closed connection = %d, want 0", as.len())
	}

	// Bytes per account with one live connection (the byName map's slots
	// made up front): 16 for the state and 8 for the slice.
	const n = 20000
	names := make([]string, n)
	clients := make([]*mqtt.Client, n)
	for i := range names {
		names[i] = "dev-" + strconv.Itoa(i)
		clients[i] = srv.NewClient(nil, "t", names[i], false)
	}
	many := &accounts{byName: make(map[string]*accountState, n)}
	per := heapcost.PerObject(n, func() {
		for i, name := range names {
			many.join(name, clients[i], name, 1, noBucket)
		}
	})
	t.Logf("account state: %.0f bytes per account with one connection", per)
	if per > 64 {
		t.Fatalf("account state holds %.0f bytes per account with one connection, want at most 64", per)
	}
	runtime.KeepAlive(many)
	runtime.KeepAlive(clients)
}
