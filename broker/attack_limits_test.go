package broker_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
)

// 7. Limits are per account, not per connection: one skill credential on many
// connections gets its account's connections (here 1) and one rate;
// subscriptions, filter length and session expiry are capped per client.
func TestAttackOneSkillManyConnections(t *testing.T) {
	f := newFleet(t, broker.Config{Skill: broker.RoleLimits{Connections: 1}}, nil)
	first, ack, err := f.skill(t, brokertest.RawConnect{ClientID: f.skillUser, Clean: true})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("first connection: %#x %v", ack.ReasonCode, err)
	}
	for i := range 50 {
		c, ack, err := f.skill(t, brokertest.RawConnect{ClientID: fmt.Sprintf("%s/%d", f.skillUser, i), Clean: true})
		if err != nil || ack.ReasonCode != 0x97 {
			t.Fatalf("connection %d of one skill: CONNACK %#x (%v), want 0x97", i+2, ack.ReasonCode, err)
		}
		c.Conn.Close()
	}
	if !strings.Contains(ackReason(t, f), "limit 1") {
		t.Fatal("the refusal does not say the limit")
	}
	// The same id again is the skill reconnecting: it takes its own session
	// over and is not counted twice.
	again, ack, err := f.skill(t, brokertest.RawConnect{ClientID: f.skillUser, Clean: true})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("reconnect with the same id: %#x %v", ack.ReasonCode, err)
	}
	if !first.ClosedWithin(wait) {
		t.Fatal("the taken-over connection stays open")
	}
	_ = again
	if st := f.b.Stats(); st.ConnectionsOverLimit != 51 { // and the probe
		t.Fatalf("ConnectionsOverLimit = %d, want 51", st.ConnectionsOverLimit)
	}
}

func ackReason(t *testing.T, f *fleet) string {
	t.Helper()
	c, ack, _ := f.skill(t, brokertest.RawConnect{ClientID: f.skillUser + "/probe", Clean: true})
	c.Conn.Close()
	return ack.Properties.ReasonString
}

// The publish rate is the account's, shared by its connections: a device's
// two connections together get one burst.
func TestAttackRateIsPerAccount(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-a")
	b := brokertest.Start(t, broker.Config{Device: broker.RoleLimits{PublishRate: 1e-6, PublishBurst: 10}}, dev.Account)
	c1 := brokertest.MustConnect(t, b.Addr(), "pi-a", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-a/1"})
	c2 := brokertest.MustConnect(t, b.Addr(), "pi-a", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-a/2"})
	accepted := 0
	for i := range 20 {
		c := c1
		if i%2 == 1 {
			c = c2
		}
		if c.Pub(t, "chorus/v1/pi-a/bus/x", []byte(`{"type":"x"}`), false) == 0 {
			accepted++
		}
	}
	if accepted != 10 {
		t.Fatalf("two connections of one account: %d publishes accepted, want the account's burst of 10", accepted)
	}
}

func TestAttackSubscriptionAndExpiryCaps(t *testing.T) {
	f := newFleet(t, broker.Config{Skill: broker.RoleLimits{Subscriptions: 4, MaxSessionExpiry: 300}}, nil)
	c, ack, err := f.skill(t, brokertest.RawConnect{ClientID: f.skillUser, Expiry: 86400})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("connect: %#x %v", ack.ReasonCode, err)
	}
	if !ack.Properties.SessionExpiryIntervalFlag || ack.Properties.SessionExpiryInterval != 300 {
		t.Fatalf("CONNACK session expiry %d (flag %v), want the skill cap 300", ack.Properties.SessionExpiryInterval, ack.Properties.SessionExpiryIntervalFlag)
	}
	bus := "chorus/v1/pi-a/bus/"
	codes := c.Subscribe(1, bus+"a", bus+"b", bus+"c", bus+"d", bus+"e", bus+strings.Repeat("x", 2000), "chorus/v1/pi-b/bus/+")
	want := []byte{1, 1, 1, 1, 0x97, 0x8F, 0x87}
	if string(codes) != string(want) {
		t.Fatalf("SUBACK % x, want % x (4 granted, the 5th over the cap, a 2 KB filter, one outside the ACL)", codes, want)
	}
	// Re-subscribing a filter already held does not count.
	if codes := c.Subscribe(2, bus+"a"); codes[0] != 1 {
		t.Fatalf("re-subscribe: % x", codes)
	}
	if got := f.b.Stats().SubscriptionsRefused; got != 2 {
		t.Fatalf("SubscriptionsRefused = %d, want 2", got)
	}
}

// 9. A resumed session gets its queued messages in the order they were
// published, also after a broker restart: a deactivate then activate queued
// during an outage must not arrive as activate, deactivate.
func TestAttackQueuedMessagesKeepTheirOrder(t *testing.T) {
	dir := t.TempDir()
	dev := brokertest.NewDevice(t, "pi-a")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{DataDir: dir}, dev.Account, op)
	addr := b.Addr()
	agent := brokertest.DialRaw(t, addr)
	agent.MustConnect(brokertest.RawConnect{ClientID: "pi-a", Username: "pi-a", Password: dev.Secret, Expiry: 3600, Clean: true})
	agent.Subscribe(1, "chorus/v1/pi-a/bus/+")
	agent.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}})
	agent.Conn.Close()

	opc := brokertest.MustConnect(t, addr, op.Username, opSecret, brokertest.ConnectOptions{})
	var want []string
	for round := range 3 { // more than one packet id run, all within a second or two
		for _, skill := range []string{"a", "b", "c", "d"} {
			for _, verb := range []string{"deactivate", "activate"} {
				msg := fmt.Sprintf(`{"type":"skillmanager.%s","data":{"skill":"%s","round":%d}}`, verb, skill, round)
				if rc := opc.Pub(t, "chorus/v1/pi-a/bus/skillmanager."+verb, []byte(msg), false); rc != 0 {
					t.Fatalf("queue: %#x", rc)
				}
				want = append(want, msg)
			}
		}
	}
	check := func(when, addr string) {
		t.Helper()
		c := brokertest.DialRaw(t, addr)
		if ack := c.MustConnect(brokertest.RawConnect{ClientID: "pi-a", Username: "pi-a", Password: dev.Secret, Expiry: 3600}); !ack.SessionPresent {
			t.Fatalf("%s: session not resumed", when)
		}
		for i, w := range want {
			pk, err := c.Next(wait)
			if err != nil || pk.FixedHeader.Type != packets.Publish || string(pk.Payload) != w {
				t.Fatalf("%s: message %d: %+v %s (%v), want %s", when, i, pk.FixedHeader, pk.Payload, err, w)
			}
		}
		c.Conn.Close() // unacknowledged: still queued for the next check
	}
	check("resumed", addr)
	b.Close()
	b2 := brokertest.Start(t, broker.Config{DataDir: dir, MQTTListen: addr}, dev.Account, op)
	check("resumed after a restart", b2.Addr())
}

// 10. A subscriber that stops reading never stalls publishers or other
// subscribers of its topic: its queue is bounded (count and bytes), and it is
// disconnected when a QoS 1 message does not fit.
func TestAttackStuckSubscriberStallsNoOne(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-a")
	op, opSecret := brokertest.NewOperator(t, "alice")
	intg, intgSecret := brokertest.NewIntegration(t, "ha")
	cfg := brokertest.Unlimited()
	cfg.MaxQueuedBytes = 16 << 20
	b := brokertest.Start(t, cfg, dev.Account, op, intg)

	stuck := brokertest.DialRaw(t, b.Addr())
	// No keepalive: on a loaded machine the publishing below can outlast
	// 1.5 x 30 s, and the stuck client must be cut as slow, not as silent.
	stuck.MustConnect(brokertest.RawConnect{Username: intg.Username, Password: intgSecret, Clean: true, NoKeepalive: true})
	stuck.Subscribe(1, "chorus/v1/pi-a/bus/+")
	// Never reads from here on.

	fast := brokertest.MustConnect(t, b.Addr(), op.Username, opSecret, brokertest.ConnectOptions{})
	fast.Sub(t, "chorus/v1/pi-a/bus/+")
	var received sync.WaitGroup
	const n = 400
	received.Add(1)
	go func() {
		defer received.Done()
		for range n {
			if _, ok := fast.Next(10 * time.Second); !ok {
				t.Error("fast subscriber starved")
				return
			}
		}
	}()

	pub := brokertest.MustConnect(t, b.Addr(), "pi-a", dev.Secret, brokertest.ConnectOptions{})
	payload := []byte(`{"type":"big","data":{"x":"` + strings.Repeat("x", 64<<10) + `"}}`) // 64 KiB: 400 are 25 MiB
	start := time.Now()
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := pub.Publish(ctx, &paho.Publish{Topic: "chorus/v1/pi-a/bus/big", QoS: 1, Payload: payload})
		cancel()
		if err != nil || r.ReasonCode != 0 {
			t.Fatalf("publish %d stalled or refused after %s: %v", i, time.Since(start), err)
		}
	}
	received.Wait()
	if !stuck.ClosedWithin(wait) {
		t.Fatal("the stuck subscriber was never disconnected")
	}
	if st := b.Stats(); st.SlowClientsDisconnected < 1 {
		t.Fatalf("SlowClientsDisconnected = %d", st.SlowClientsDisconnected)
	}
	t.Logf("%d x 64 KiB past a stuck subscriber in %s", n, time.Since(start))
}

// A QoS 0 subscriber that stops reading loses messages from then on; once it
// has been losing them for SlowClientTimeout without catching up, it is
// stuck, not slow, and is disconnected.
func TestStuckQoS0SubscriberCut(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-a")
	intg, intgSecret := brokertest.NewIntegration(t, "ha")
	cfg := brokertest.Unlimited()
	cfg.MaxWritesPending, cfg.SlowClientTimeout = 16, 500*time.Millisecond
	b := brokertest.Start(t, cfg, dev.Account, intg)
	stuck := brokertest.DialRaw(t, b.Addr())
	stuck.MustConnect(brokertest.RawConnect{Username: intg.Username, Password: intgSecret, Clean: true})
	stuck.Subscribe(1, "chorus/v1/pi-a/bus/+")

	pub := brokertest.DialRaw(t, b.Addr())
	pub.MustConnect(brokertest.RawConnect{ClientID: "pi-a", Username: "pi-a", Password: dev.Secret, Clean: true})
	msg := pub.Encode(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "chorus/v1/pi-a/bus/x",
		Payload: []byte(`{"type":"x","data":{"pad":"` + strings.Repeat("x", 32<<10) + `"}}`)})
	deadline := time.Now().Add(wait)
	for b.Stats().SlowClientsDisconnected == 0 && time.Now().Before(deadline) {
		pub.Write(msg)
	}
	if b.Stats().SlowClientsDisconnected != 1 || b.Stats().MessagesDropped == 0 {
		t.Fatalf("stats %+v: want the stuck QoS 0 subscriber cut after dropping", b.Stats())
	}
	if !stuck.ClosedWithin(wait) {
		t.Fatal("the stuck subscriber's connection stays open")
	}
}
