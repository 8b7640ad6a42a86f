package broker_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// jsonOf returns a JSON string literal of exactly n bytes (n >= 2).
func jsonOf(n int) []byte { return []byte(`"` + strings.Repeat("a", n-2) + `"`) }

// speakOf returns a "speak" bus message of exactly n bytes (n >= 40).
func speakOf(n int) []byte {
	const head, tail = `{"type":"speak","data":{"utterance":"`, `"}}`
	return []byte(head + strings.Repeat("a", n-len(head)-len(tail)) + tail)
}

func deep(n int) []byte {
	return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
}

// Each topic class has its payload cap: a payload at the cap is accepted,
// one byte more is refused with PUBACK 0x99 "payload format invalid".
func TestPayloadSizeLimits(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	intg, intgSecret := brokertest.NewIntegration(t, "ha")
	op, opSecret := brokertest.NewOperator(t, "alice")
	b := brokertest.Start(t, broker.Config{Device: broker.RoleLimits{MaxBusPayload: 4096}, Integration: broker.RoleLimits{MaxBusPayload: 4096}, Operator: broker.RoleLimits{MaxBusPayload: 4096}, Skill: broker.RoleLimits{MaxBusPayload: 1024}}, dev.Account, intg, op)
	clients := map[string]*brokertest.Client{
		"device":      brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"}),
		"skill":       connectSkill(t, b, dev, "pi-1", "s"),
		"integration": brokertest.MustConnect(t, b.Addr(), "integration:ha", intgSecret, brokertest.ConnectOptions{ClientID: "i"}),
		"operator":    brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: "o"}),
	}
	tests := []struct {
		who, topic string
		retain     bool
		max        int
		body       func(int) []byte
	}{
		{"device", "chorus/v1/pi-1/availability", true, 16, text},
		{"device", "chorus/v1/pi-1/birth", true, 4 << 10, jsonOf},
		{"device", "chorus/v1/pi-1/connectivity", true, 4 << 10, jsonOf},
		{"device", "chorus/v1/pi-1/skills", true, 256 << 10, jsonOf},
		{"device", "chorus/v1/pi-1/bus/speak", false, 4096, jsonOf},
		{"operator", "chorus/v1/pi-1/bus/speak", false, 4096, jsonOf},
		{"skill", "chorus/v1/pi-1/bus/speak", false, 1024, speakOf},
		{"integration", "chorus/v1/pi-1/skill/hello/set", false, 8, text},
		{"integration", "chorus/v1/pi-1/skill/hello/update/set", false, 16, text},
		{"integration", "homeassistant/status", false, 16, text},
	}
	for _, tc := range tests {
		t.Run(tc.who+" "+tc.topic, func(t *testing.T) {
			c := clients[tc.who]
			if rc := c.Pub(t, tc.topic, tc.body(tc.max), tc.retain); rc != 0 {
				t.Fatalf("%d bytes (the cap): reason %#x, want accepted", tc.max, rc)
			}
			if rc := c.Pub(t, tc.topic, tc.body(tc.max+1), tc.retain); rc != 0x99 {
				t.Fatalf("%d bytes: reason %#x, want 0x99", tc.max+1, rc)
			}
		})
	}
	if got, want := b.Stats().PayloadsRefused, int64(len(tests)); got != want {
		t.Fatalf("PayloadsRefused = %d, want %d", got, want)
	}
}

func text(n int) []byte { return bytes.Repeat([]byte("x"), n) }

// A refused oversized state message does not replace the retained one.
func TestOversizedStateNotRetained(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	d.Pub(t, "chorus/v1/pi-1/availability", []byte("online"), true)
	if rc := d.Pub(t, "chorus/v1/pi-1/availability", text(17), true); rc != 0x99 {
		t.Fatalf("oversized availability: reason %#x, want 0x99", rc)
	}
	w := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/w"})
	w.Sub(t, "chorus/v1/pi-1/availability")
	if m := w.Expect(t, "chorus/v1/pi-1/availability", wait); string(m.Payload) != "online" {
		t.Fatalf("retained availability = %q, want online", m.Payload)
	}
}

// JSON topics refuse payloads nested deeper than 64 levels; plain-text
// topics and strings that merely contain brackets are not JSON structure.
func TestJSONDepthLimit(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/d"})
	s := connectSkill(t, b, dev, "pi-1", "s")
	tests := []struct {
		name   string
		c      *brokertest.Client
		topic  string
		retain bool
		body   []byte
		want   byte
	}{
		{"bus 64 deep", d, "chorus/v1/pi-1/bus/speak", false, deep(64), 0},
		{"bus 65 deep", d, "chorus/v1/pi-1/bus/speak", false, deep(65), 0x99},
		{"skill bus 65 deep", s, "chorus/v1/pi-1/bus/speak", false, deep(65), 0x99},
		{"skill bus brackets in a string", s, "chorus/v1/pi-1/bus/speak", false, []byte(`{"type":"speak","data":{"text":"` + strings.Repeat("[", 500) + `"}}`), 0},
		{"birth 65 deep", d, "chorus/v1/pi-1/birth", true, deep(65), 0x99},
		{"connectivity 65 deep", d, "chorus/v1/pi-1/connectivity", true, deep(65), 0x99},
		{"skills 65 deep", d, "chorus/v1/pi-1/skills", true, deep(65), 0x99},
		{"skills 64 deep", d, "chorus/v1/pi-1/skills", true, deep(64), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if rc := tc.c.Pub(t, tc.topic, tc.body, tc.retain); rc != tc.want {
				t.Fatalf("reason %#x, want %#x", rc, tc.want)
			}
		})
	}
}

// mochi publishes a Will without OnPublish, so its payload limits are
// checked at CONNECT.
func TestWillPayloadLimit(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	b := brokertest.Start(t, broker.Config{}, dev.Account)
	_, err := brokertest.Connect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{
		ClientID: "pi-1/d", Will: &paho.WillMessage{Topic: "chorus/v1/pi-1/availability", Payload: text(17), Retain: true, QoS: 1},
	})
	if err == nil {
		t.Fatal("connect with an oversized will succeeded")
	}
}

// A connection's state lives from authentication to disconnect; its
// account's publish bucket lives on until it has refilled, so an account
// that disconnects and reconnects gets no fresh burst.
func TestPolicyStateDroppedAtDisconnect(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	clock := &manualClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	b := brokertest.Start(t, broker.Config{Now: clock.Now, Device: broker.RoleLimits{PublishRate: 1, PublishBurst: 3}}, dev.Account)
	c := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1"})
	if n := b.TrackedSessions(); n != 1 {
		t.Fatalf("sessions = %d, want 1", n)
	}
	for range 3 {
		c.Pub(t, "chorus/v1/pi-1/bus/x", []byte(`{"type":"x"}`), false)
	}
	c.Close()
	poll.Until(t, "no tracked sessions", wait, func() bool { return b.TrackedSessions() == 0 })
	b.SweepPolicy()
	if n := b.TrackedAccounts(); n != 1 {
		t.Fatalf("accounts right after the disconnect = %d, want 1 (the bucket is empty)", n)
	}
	c = brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1"})
	if rc := c.Pub(t, "chorus/v1/pi-1/bus/x", []byte(`{"type":"x"}`), false); rc != 0x97 {
		t.Fatalf("publish after reconnecting with an empty bucket: reason %#x, want 0x97", rc)
	}
	c.Close()
	poll.Until(t, "no tracked sessions", wait, func() bool { return b.TrackedSessions() == 0 })
	clock.Add(3 * time.Second)
	b.SweepPolicy()
	if n := b.TrackedAccounts(); n != 0 {
		t.Fatalf("accounts once the bucket has refilled = %d, want 0", n)
	}
}

// manualClock is a clock tests move by hand.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
