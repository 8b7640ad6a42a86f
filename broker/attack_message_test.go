package broker_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
)

// barrierAfter publishes a barrier on the operator's connection and reports
// whether watch received topic before it.
func receivedBefore(t *testing.T, f *fleet, watch *brokertest.Client, topic string) bool {
	t.Helper()
	op := brokertest.MustConnect(t, f.addr, f.opUser, f.op, brokertest.ConnectOptions{})
	barrier := "chorus/v1/pi-a/bus/barrier"
	if rc := op.Pub(t, barrier, []byte(`{"type":"barrier"}`), false); rc != 0 {
		t.Fatalf("barrier: %#x", rc)
	}
	got := false
	deadline := time.After(wait)
	for {
		select {
		case <-deadline:
			t.Fatal("barrier not received")
		default:
		}
		m, ok := watch.Next(wait)
		if !ok {
			t.Fatal("barrier not received")
		}
		if m.Topic == barrier {
			return got
		}
		got = got || m.Topic == topic
	}
}

// 3. A Will is a publish the client makes by leaving: it is checked like one
// at CONNECT (management types, forged skill_id, ambiguous envelopes,
// payload caps, retain rules), and its refusal names the Will.
func TestAttackWillUnderPolicy(t *testing.T) {
	f := newFleet(t, broker.Config{}, nil)
	bus := "chorus/v1/pi-a/bus/"
	cases := []struct {
		name    string
		topic   string
		payload string
		retain  bool
		want    byte
	}{
		{"management type", bus + "skillmanager.deactivate", `{"type":"skillmanager.deactivate"}`, false, 0x87},
		{"keep", bus + "skillmanager.keep", `{"type":"skillmanager.keep"}`, false, 0x87},
		{"connectivity", bus + "mycroft.internet.connected", `{"type":"mycroft.internet.connected"}`, false, 0x87},
		{"forged skill_id", bus + "speak", `{"type":"speak","context":{"skill_id":"other.skill"}}`, false, 0x87},
		{"ambiguous skill_id", bus + "speak", `{"type":"speak","context":{"skill_id":"hello","SKILL_ID":"other"}}`, false, 0x99},
		{"type not the topic's", bus + "speak", `{"type":"skillmanager.deactivate"}`, false, 0x99},
		{"too large", bus + "speak", `{"type":"speak","data":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`, false, 0x00}, // over 16 KiB: closed before authentication
		{"retained", bus + "speak", `{"type":"speak"}`, true, 0x87},
		{"state topic", "chorus/v1/pi-a/availability", `offline`, true, 0x87},
	}
	watch := brokertest.MustConnect(t, f.addr, f.opUser, f.op, brokertest.ConnectOptions{})
	watch.Sub(t, "chorus/v1/pi-a/#")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			will := &packets.Packet{TopicName: tc.topic, Payload: []byte(tc.payload), FixedHeader: packets.FixedHeader{Qos: 1, Retain: tc.retain}}
			o := brokertest.RawConnect{ClientID: f.skillUser, Clean: true, Will: will}
			if tc.want == 0 {
				c := brokertest.DialRaw(t, f.addr)
				o.Username, o.Password = f.skillUser, f.skillSecret
				_, _ = c.Conn.Write(c.Encode(brokertest.ConnectPacket(o))) // the broker may close mid-write
				if !c.ClosedWithin(wait) {
					t.Fatal("oversized CONNECT: the connection stays open")
				}
				return
			}
			c, ack, err := f.skill(t, o)
			if err != nil || ack.ReasonCode != tc.want {
				t.Fatalf("CONNACK %#x (%v), want %#x", ack.ReasonCode, err, tc.want)
			}
			if !strings.HasPrefix(ack.Properties.ReasonString, "will refused") {
				t.Fatalf("reason string %q does not name the Will", ack.Properties.ReasonString)
			}
			c.Conn.Close()
			if receivedBefore(t, f, watch, tc.topic) {
				t.Fatalf("the refused Will was delivered on %s", tc.topic)
			}
		})
	}
	if f.b.Stats().WillsRefused < int64(len(cases)-1) {
		t.Fatalf("WillsRefused = %d", f.b.Stats().WillsRefused)
	}
}

// 3, continued. A Will allowed at CONNECT is checked again when it is sent:
// a grant withdrawn meanwhile (the table replaced) drops it.
func TestAttackWillRecheckedWhenSent(t *testing.T) {
	grants := map[string][]string{"hello": {"skillmanager.keep"}}
	f := newFleet(t, broker.Config{}, grants)
	watch := brokertest.MustConnect(t, f.addr, f.opUser, f.op, brokertest.ConnectOptions{})
	watch.Sub(t, "chorus/v1/pi-a/bus/+")
	topic := "chorus/v1/pi-a/bus/skillmanager.keep"
	will := &packets.Packet{TopicName: topic, Payload: []byte(`{"type":"skillmanager.keep"}`), FixedHeader: packets.FixedHeader{Qos: 1}}
	c, ack, err := f.skill(t, brokertest.RawConnect{ClientID: f.skillUser, Clean: true, Will: will})
	if err != nil || ack.ReasonCode != 0 {
		t.Fatalf("granted Will refused at CONNECT: %#x %v", ack.ReasonCode, err)
	}
	dev := f.a.Account
	dev.SkillGrants = nil // the grant is withdrawn; the skill stays connected
	table, err := broker.NewTable(dev, f.bdev.Account, mustAccount(t, f.b, f.intgUser), mustAccount(t, f.b, f.opUser))
	if err != nil {
		t.Fatal(err)
	}
	f.b.SetTable(table)
	c.Conn.Close() // the Will is due now
	if receivedBefore(t, f, watch, topic) {
		t.Fatal("a Will the skill may no longer publish was delivered")
	}
}

func mustAccount(t *testing.T, b *broker.Broker, user string) broker.Account {
	t.Helper()
	a, ok := b.Table().Lookup(user)
	if !ok {
		t.Fatalf("no account %s", user)
	}
	return *a
}

// 6. The broker reads a skill's message exactly as consumers do: an envelope
// that different readers would read differently (a known key twice or in
// another case) is refused, so no consumer can be shown another skill's id.
func TestAttackForgedSkillIDThroughParserDifference(t *testing.T) {
	f := newFleet(t, broker.Config{}, nil)
	watch := brokertest.MustConnect(t, f.addr, f.opUser, f.op, brokertest.ConnectOptions{})
	watch.Sub(t, "chorus/v1/pi-a/bus/+")
	s := brokertest.MustConnect(t, f.addr, f.skillUser, f.skillSecret, brokertest.ConnectOptions{ClientID: f.skillUser})
	topic := "chorus/v1/pi-a/bus/speak"
	cases := []struct{ name, payload string }{
		{"case variant of skill_id", `{"type":"speak","context":{"skill_id":"hello","SKILL_ID":"evil.skill"}}`},
		{"second context", `{"type":"speak","context":{"skill_id":"hello"},"Context":{"skill_id":"evil.skill"}}`},
		{"context of another type", `{"type":"speak","context":{"skill_id":"hello"},"CONTEXT":5}`},
		{"duplicate skill_id", `{"type":"speak","context":{"skill_id":"hello","skill_id":"evil.skill"}}`},
		{"escaped key", `{"type":"speak","context":{"skill_id":"hello","sk\u0069ll_id":"evil.skill"}}`},
		{"duplicate type", `{"type":"speak","type":"skillmanager.deactivate"}`},
		{"not JSON", `{"type":"speak"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if rc := s.Pub(t, topic, []byte(tc.payload), false); rc != 0x99 {
				t.Fatalf("reason %#x, want 0x99", rc)
			}
			if receivedBefore(t, f, watch, topic) {
				t.Fatal("delivered")
			}
		})
	}
	if rc := s.Pub(t, topic, []byte(`{"type":"speak","context":{"skill_id":"hello"}}`), false); rc != 0 {
		t.Fatalf("an honest message: reason %#x", rc)
	}
}

// 8. A flood of refusals is counted in full but logged as a sample: refused
// CONNECTs with 16 KiB usernames and refused 100 KB publishes may not turn
// into megabytes of log.
func TestAttackRefusalsDoNotFloodTheLog(t *testing.T) {
	var logBuf lockedBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dev := brokertest.NewDevice(t, "pi-a")
	b := brokertest.Start(t, broker.Config{Logger: log}, dev.Account)
	const n = 200
	user := strings.Repeat("u\x1b[31m", 2000) // 12 KB with terminal escapes
	for range n {
		c := brokertest.DialRaw(t, b.Addr())
		ack, err := c.Connect(brokertest.RawConnect{Username: user, Password: "x", Clean: true})
		if err != nil || ack.ReasonCode != 0x86 {
			t.Fatalf("CONNACK %#x %v", ack.ReasonCode, err)
		}
		c.Conn.Close()
	}
	d := brokertest.DialRaw(t, b.Addr())
	d.MustConnect(brokertest.RawConnect{ClientID: "pi-a", Username: "pi-a", Password: dev.Secret, Clean: true})
	big := bytes.Repeat([]byte("9"), 100<<10)
	for i := range n {
		d.Publish("chorus/v1/pi-b/bus/speak", big, 1, uint16(i+1), packets.Properties{}) // another device's bus: refused
		if ack := d.Expect(packets.Puback, wait); ack.ReasonCode != 0x87 {
			t.Fatalf("PUBACK %#x", ack.ReasonCode)
		}
	}
	out := logBuf.String()
	if len(out) > 64<<10 {
		t.Fatalf("%d refusals wrote %d bytes of log", 2*n, len(out))
	}
	if strings.Contains(out, "\x1b") || strings.Contains(out, "57 57 57") || strings.Contains(out, "[57") {
		t.Fatal("the log carries raw peer bytes or a packet dump")
	}
	st := b.Stats()
	if st.ConnectsRefused != n || st.PublishesRefused != n {
		t.Fatalf("counted %d connects, %d publishes; want %d each", st.ConnectsRefused, st.PublishesRefused, n)
	}
	t.Logf("%d refusals: %d bytes of log", 2*n, len(out))
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
