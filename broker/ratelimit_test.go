package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

func connectSkill(t *testing.T, b *broker.Broker, dev brokertest.Device, device, skill string) *brokertest.Client {
	t.Helper()
	return brokertest.MustConnect(t, b.Addr(), skillcred.Username(device, skill), skillcred.Mint(dev.Key, 1, device, skill),
		brokertest.ConnectOptions{ClientID: skillcred.Username(device, skill)})
}

// Each role gets its own bucket: a client past its burst is refused with
// PUBACK 0x97 "quota exceeded" while the others still publish.
func TestRateLimitPerRole(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	// A rate that refills nothing within the test: the burst is all there is.
	b := brokertest.Start(t, broker.Config{Device: broker.RoleLimits{PublishRate: 1e-6, PublishBurst: 5}, Operator: broker.RoleLimits{PublishRate: 1e-6, PublishBurst: 5}, Skill: broker.RoleLimits{PublishRate: 1e-6, PublishBurst: 3}}, dev.Account, op)
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	o := brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "o"})
	s1 := connectSkill(t, b, dev, "pi-1", "one")
	s2 := connectSkill(t, b, dev, "pi-1", "two")

	tests := []struct {
		name     string
		c        *brokertest.Client
		accepted int // publishes accepted before the first 0x97
	}{
		{"skill one", s1, 3},
		{"skill two has its own bucket", s2, 3},
		{"device", d, 5},
		{"operator", o, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.accepted + 2 {
				rc := tc.c.Pub(t, "chorus/v1/pi-1/bus/speak", []byte(`{"type":"speak"}`), false)
				want := byte(0)
				if i >= tc.accepted {
					want = 0x97
				}
				if rc != want {
					t.Fatalf("publish %d: reason %#x, want %#x", i, rc, want)
				}
			}
		})
	}
	if got, want := b.Stats().PublishesThrottled, int64(4*2); got != want {
		t.Fatalf("PublishesThrottled = %d, want %d", got, want)
	}
}

// A negative rate turns the limit off; the inline client is never limited.
func TestRateLimitOffAndInlineExempt(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{Device: broker.RoleLimits{PublishRate: -1}, Skill: broker.RoleLimits{PublishRate: 1e-6, PublishBurst: 1}}, dev.Account, op)
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	for i := range 50 {
		if rc := d.Pub(t, "chorus/v1/pi-1/bus/speak", []byte(`{}`), false); rc != 0 {
			t.Fatalf("unlimited device, publish %d: reason %#x", i, rc)
		}
	}
	w := brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "w"})
	w.Sub(t, "chorus/v1/pi-1/bus/+")
	const n = 200
	for i := range n {
		if err := b.Publish(broker.Message{Topic: "chorus/v1/pi-1/bus/inline", Payload: []byte(`{}`)}); err != nil {
			t.Fatalf("inline publish %d: %v", i, err)
		}
	}
	for i := range n {
		if _, ok := w.Next(wait); !ok {
			t.Fatalf("got %d of %d inline messages", i, n)
		}
	}
	if got := b.Stats().PublishesThrottled; got != 0 {
		t.Fatalf("PublishesThrottled = %d, want 0", got)
	}
}

// A skill flooding its bus at QoS 0 cannot starve another client: every
// message of a well-behaved client on the same broker is accepted and
// delivered, while the flooder gets no more than its bucket allows, and its
// connection is then read no faster than its rate (flood back-pressure): the
// broker is not made to decode and refuse the flood at wire speed.
func TestRateLimitFlooderDoesNotStarveOthers(t *testing.T) {
	const rate, burst = 50, 100
	dev := brokertest.NewDevice(t, "pi-1")
	dev2 := brokertest.NewDevice(t, "pi-2")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{Skill: broker.RoleLimits{PublishRate: rate, PublishBurst: burst}}, dev.Account, dev2.Account, op)

	floodWatch := brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "fw"})
	floodWatch.Sub(t, "chorus/v1/pi-1/bus/flood")
	normalWatch := brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "nw"})
	normalWatch.Sub(t, "chorus/v1/pi-2/bus/+")

	flooder := brokertest.DialRaw(t, b.Addr())
	floodUser := skillcred.Username("pi-1", "flood")
	flooder.MustConnect(brokertest.RawConnect{ClientID: floodUser, Username: floodUser, Password: skillcred.Mint(dev.Key, 1, "pi-1", "flood"), Clean: true})
	normal := connectSkill(t, b, dev2, "pi-2", "calm")

	start := time.Now()
	floodCtx, stopFlood := context.WithCancel(context.Background())
	floodDone := make(chan int, 1)
	one := flooder.Encode(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish}, TopicName: "chorus/v1/pi-1/bus/flood", Payload: []byte(`{"type":"flood"}`)})
	batch := bytes.Repeat(one, 100)
	go func() {
		sent := 0
		for floodCtx.Err() == nil {
			_ = flooder.Conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			n, _ := flooder.Conn.Write(batch) // blocks once the broker reads at the rate: back-pressure
			sent += n / len(one)
		}
		floodDone <- sent
	}()

	const normals = 50 // within the normal skill's own burst
	for i := range normals {
		payload := fmt.Appendf(nil, `{"type":"calm","data":{"n":%d}}`, i)
		if rc := normal.Pub(t, "chorus/v1/pi-2/bus/calm", payload, false); rc != 0 {
			t.Fatalf("normal publish %d during the flood: reason %#x", i, rc)
		}
	}
	for i := range normals {
		if _, ok := normalWatch.Next(wait); !ok {
			t.Fatalf("normal client: %d of %d messages delivered", i, normals)
		}
	}
	// Let the flood run into its back-pressure for a while, then stop it.
	poll.Until(t, "a throttled publish after the flood run", wait, func() bool { return b.Stats().PublishesThrottled > floodRun })
	time.Sleep(time.Second) // the flood goes on; the measure is what it costs meanwhile
	stopFlood()
	sent := <-floodDone
	// What waits in the flooder's socket goes on being read at the rate;
	// count what arrives within a second more.
	delivered := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if _, ok := floodWatch.Next(time.Until(end)); ok {
			delivered++
		}
	}
	elapsed := time.Since(start).Seconds()
	throttled := b.Stats().PublishesThrottled
	t.Logf("flooder: %d written to its socket, %d delivered, %d refused in %.2fs", sent, delivered, throttled, elapsed)
	if limit := burst + int(rate*elapsed) + 1; delivered > limit || delivered < burst {
		t.Fatalf("flooder delivered %d messages in %.1fs, want between %d and %d", delivered, elapsed, burst, limit)
	}
	// Once flooding, the client is read at its rate: its publishes wait
	// for tokens instead of being refused at wire speed.
	if max := int64(floodRun + 50); throttled > max {
		t.Fatalf("%d publishes refused in %.1fs: the flood was read at wire speed (want at most %d)", throttled, elapsed, max)
	}
}

// floodRun is broker's back-pressure threshold (ratelimit.go).
const floodRun = 16
