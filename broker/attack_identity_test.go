package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// The attack tests of docs/security.md: each tries, as the weakest role or
// a stranger would, to break one sentence of the page, over TCP with raw
// packets where a client library would refuse to send them. Numbers in the
// names are the findings of the broker trust-boundary review.

// fleet is a broker with two devices (pi-a, pi-b), a skill "hello" of pi-a,
// an integration and an operator.
type fleet struct {
	b           *broker.Broker
	a, bdev     brokertest.Device
	intg, op    string // secrets
	intgUser    string
	opUser      string
	skillUser   string
	skillSecret string
	addr        string
}

func newFleet(t *testing.T, cfg broker.Config, grants map[string][]string) *fleet {
	t.Helper()
	f := &fleet{a: brokertest.NewDevice(t, "pi-a"), bdev: brokertest.NewDevice(t, "pi-b")}
	f.a.Account.SkillGrants = grants
	intg, intgSecret := brokertest.NewIntegration(t, "ha")
	op, opSecret := brokertest.NewOperator(t, "alice")
	f.intg, f.op, f.intgUser, f.opUser = intgSecret, opSecret, intg.Username, op.Username
	f.b = brokertest.Start(t, cfg, f.a.Account, f.bdev.Account, intg, op)
	f.addr = f.b.Addr()
	f.skillUser = skillcred.Username("pi-a", "hello")
	f.skillSecret = skillcred.Mint(f.a.Key, 1, "pi-a", "hello")
	return f
}

func (f *fleet) skill(t *testing.T, o brokertest.RawConnect) (*brokertest.Raw, packets.Packet, error) {
	t.Helper()
	c := brokertest.DialRaw(t, f.addr)
	o.Username, o.Password = f.skillUser, f.skillSecret
	ack, err := c.Connect(o)
	return c, ack, err
}

// 1. No account can take the gateway's own in-process client: mochi keeps it
// under the client id "inline", where a skill connecting with that id kicked
// it off and every controller publish failed until a restart.
func TestAttackInlineClientIDCannotDisableController(t *testing.T) {
	f := newFleet(t, broker.Config{}, nil)
	watch := brokertest.MustConnect(t, f.addr, f.opUser, f.op, brokertest.ConnectOptions{})
	watch.Sub(t, "chorus/v1/pi-a/desired")

	c, ack, err := f.skill(t, brokertest.RawConnect{ClientID: "inline", Clean: true})
	if err != nil || ack.ReasonCode != packets.ErrClientIdentifierNotValid.Code {
		t.Fatalf("skill connecting as \"inline\": CONNACK %#x (%v), want 0x85", ack.ReasonCode, err)
	}
	if !c.ClosedWithin(wait) {
		t.Fatal("refused connection left open")
	}
	// An operator may pick any id; it is placed under its name and reaches
	// nothing of the gateway's.
	opc := brokertest.DialRaw(t, f.addr)
	opc.MustConnect(brokertest.RawConnect{ClientID: "inline", Username: f.opUser, Password: f.op, Clean: true})
	opc.Conn.Close()

	for i := range 3 {
		if err := f.b.Publish(broker.Message{Topic: "chorus/v1/pi-a/desired", Payload: []byte(`{"version":1}`), QoS: 1, Retain: true}); err != nil {
			t.Fatalf("controller publish %d after the impostors: %v", i, err)
		}
	}
	watch.Expect(t, "chorus/v1/pi-a/desired", wait)
	if h := f.b.Health(); len(h.Failing()) != 0 {
		t.Fatalf("health after the impostors: %v", h.Failing())
	}
}

// 2. Client ids belong to accounts: a skill of pi-a cannot use pi-b's id,
// neither to kick pi-b's agent off nor to resume pi-b's persistent session
// and take its queued messages.
func TestAttackClientIDBoundToAccount(t *testing.T) {
	f := newFleet(t, broker.Config{}, nil)
	// pi-b's agent: a persistent session, offline with a queued message.
	agent := brokertest.DialRaw(t, f.addr)
	agent.MustConnect(brokertest.RawConnect{ClientID: "pi-b", Username: "pi-b", Password: f.bdev.Secret, Expiry: 3600, Clean: true})
	agent.Subscribe(1, "chorus/v1/pi-b/bus/+")
	agent.Send(packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Disconnect}})
	agent.Conn.Close()
	op := brokertest.MustConnect(t, f.addr, f.opUser, f.op, brokertest.ConnectOptions{})
	op.Pub(t, "chorus/v1/pi-b/bus/recognizer_loop:utterance", []byte(`{"type":"recognizer_loop:utterance","data":{"utterances":["secret"]}}`), false)

	tries := []struct {
		name, user, pass string
	}{
		{"skill of another device", f.skillUser, f.skillSecret},
		{"another device", "pi-a", f.a.Secret},
	}
	for _, tc := range tries {
		t.Run(tc.name, func(t *testing.T) {
			c := brokertest.DialRaw(t, f.addr)
			ack, err := c.Connect(brokertest.RawConnect{ClientID: "pi-b", Username: tc.user, Password: tc.pass, Clean: false, Expiry: 3600})
			if err != nil || ack.ReasonCode != packets.ErrClientIdentifierNotValid.Code || ack.SessionPresent {
				t.Fatalf("CONNACK %#x present=%v (%v), want 0x85 and no session", ack.ReasonCode, ack.SessionPresent, err)
			}
			if pk, err := c.Next(200 * time.Millisecond); err == nil && pk.FixedHeader.Type == packets.Publish {
				t.Fatalf("impostor received pi-b's queued message %s", pk.Payload)
			}
		})
	}
	// An integration's own id "pi-b" lives under its name: it resumes
	// nothing of pi-b's either.
	ic := brokertest.DialRaw(t, f.addr)
	ack := ic.MustConnect(brokertest.RawConnect{ClientID: "pi-b", Username: f.intgUser, Password: f.intg, Expiry: 3600})
	if ack.SessionPresent {
		t.Fatal("integration resumed pi-b's session")
	}

	// pi-b's agent comes back and gets its message; a live agent is not
	// kicked by an impostor either.
	back := brokertest.DialRaw(t, f.addr)
	ack = back.MustConnect(brokertest.RawConnect{ClientID: "pi-b", Username: "pi-b", Password: f.bdev.Secret, Expiry: 3600})
	if !ack.SessionPresent {
		t.Fatal("pi-b's session is gone")
	}
	if m := back.Expect(packets.Publish, wait); !strings.Contains(string(m.Payload), "secret") {
		t.Fatalf("pi-b got %s", m.Payload)
	}
	_, _, _ = f.skill(t, brokertest.RawConnect{ClientID: "pi-b", Clean: true})
	if back.ClosedWithin(300 * time.Millisecond) {
		t.Fatal("an impostor's CONNECT disconnected pi-b's agent")
	}
}

// The id rule itself, for every role (docs/security.md, "Client identifiers").
func TestClientIDRule(t *testing.T) {
	f := newFleet(t, brokertest.Unlimited(), nil)
	cases := []struct {
		name, user, pass, id string
		want                 byte   // CONNACK reason
		assigned             string // the assigned client id's prefix, for an empty id
	}{
		{"device as itself", "pi-a", f.a.Secret, "pi-a", 0, ""},
		{"device with a suffix", "pi-a", f.a.Secret, "pi-a/tool", 0, ""},
		{"device as another", "pi-a", f.a.Secret, "pi-b", 0x85, ""},
		{"device as a prefix of its name", "pi-a", f.a.Secret, "pi-", 0x85, ""},
		{"device, empty id", "pi-a", f.a.Secret, "", 0, "pi-a/"},
		{"skill as itself", f.skillUser, f.skillSecret, f.skillUser, 0, ""},
		{"skill as its device", f.skillUser, f.skillSecret, "pi-a", 0x85, ""},
		{"skill, empty id", f.skillUser, f.skillSecret, "", 0, f.skillUser + "/"},
		{"integration, its own id", f.intgUser, f.intg, "home-assistant-42", 0, ""},
		{"integration, empty id", f.intgUser, f.intg, "", 0, f.intgUser + "/"},
		{"operator as a device id", f.opUser, f.op, "pi-a", 0, ""},
		{"id too long", "pi-a", f.a.Secret, "pi-a/" + strings.Repeat("x", 300), 0x85, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := brokertest.DialRaw(t, f.addr)
			ack, err := c.Connect(brokertest.RawConnect{ClientID: tc.id, Username: tc.user, Password: tc.pass, Clean: true})
			if err != nil || ack.ReasonCode != tc.want {
				t.Fatalf("CONNACK %#x (%v), want %#x", ack.ReasonCode, err, tc.want)
			}
			if tc.want >= 0x80 {
				if !strings.Contains(ack.Properties.ReasonString, "client id") {
					t.Fatalf("reason string %q does not say what is wrong", ack.Properties.ReasonString)
				}
				return
			}
			if got := ack.Properties.AssignedClientID; tc.assigned != "" && !strings.HasPrefix(got, tc.assigned) {
				t.Fatalf("assigned client id %q, want it under %q", got, tc.assigned)
			}
		})
	}
}
