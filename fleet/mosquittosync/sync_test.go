package mosquittosync

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet/mosquittoexport"
	"github.com/chorus-edge/chorus/fleet/mosquittoexport/mosquittotest"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// The syncer against a real Mosquitto 2 with its dynamic-security plugin
// that starts with only the sync's own account: a client whose password is
// known is created, one handed over by SetSecret is created, a rotation
// handed over re-sets it, one that leaves the desired set is deleted, and
// Await returns once the plugin holds what it names.
func TestSyncerOnMosquitto(t *testing.T) {
	boot := mosquittotest.Bootstrap(t, "controller", "ctl-pass")
	mq := mosquittotest.Start(t, mosquittotest.Config{DynSec: boot})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := bus.DialMQTT(ctx, bus.MQTTConfig{URL: "mqtt://" + mq.Addr, Username: "controller", Password: "ctl-pass", CleanStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	acls := func(dev string) []mosquittoexport.ACL {
		return []mosquittoexport.ACL{{ACLType: mosquittoexport.PublishClientSend, Topic: "chorus/v1/" + dev + "/#", Allow: true}}
	}
	var mu sync.Mutex
	desired := []Client{
		{Username: "skill:pi-1:hello", Kind: "skill", Fingerprint: "s1", Password: "d1.skill", ACLs: acls("pi-1")},
		{Username: "pi-1", Kind: "device", Fingerprint: "f1", ACLs: acls("pi-1")},
	}
	setDesired := func(cs ...Client) { mu.Lock(); desired = cs; mu.Unlock() }
	s, err := New(Config{Transport: m, Self: "controller", Debounce: 10 * time.Millisecond, Resync: time.Hour,
		Desired: func(context.Context) ([]Client, error) {
			mu.Lock()
			defer mu.Unlock()
			return append([]Client(nil), desired...), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if !s.Await(ctx, "skill:pi-1:hello") {
		t.Fatal("Await: skill client never ready")
	}
	if !s.Healthy() {
		t.Error("Healthy false after a successful pass")
	}
	mq.WaitLogin(t, "skill:pi-1:hello", "d1.skill", true)
	mq.WaitLogin(t, "pi-1", "first", false) // its secret was never handed over

	s.SetSecret("pi-1", "f1", "first")
	if !s.Await(ctx, "pi-1") {
		t.Fatal("Await: device never ready")
	}
	mq.WaitLogin(t, "pi-1", "first", true)

	setDesired(Client{Username: "pi-1", Kind: "device", Fingerprint: "f2", ACLs: acls("pi-1")})
	s.SetSecret("pi-1", "f2", "second")
	mq.WaitLogin(t, "pi-1", "second", true)
	mq.WaitLogin(t, "pi-1", "first", false)
	mq.WaitLogin(t, "skill:pi-1:hello", "d1.skill", false) // left the desired set

	setDesired()
	s.Trigger()
	mq.WaitLogin(t, "pi-1", "second", false)
	s.Close()
	s.Close() // idempotent
}
