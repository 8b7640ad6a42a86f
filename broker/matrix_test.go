package broker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/skillcred"
)

// The clients of the matrix: device pi-1 (its agent), skill "s" of pi-1,
// integration "ha" granted the bus type "speak", operator "alice". pi-2 is
// "another device".
var matrixRoles = []string{"device", "skill", "integration", "operator"}

// matrixRow is one topic of the ACL matrix and what each role may do on it:
// a cell holds R (subscribe and receive), W (publish) and T (publish
// retained); an empty cell is refused.
type matrixRow struct {
	class, topic string
	cells        [4]string // device, skill, integration, operator
}

// aclMatrix mirrors the table "The ACL matrix" of docs/security.md, row by
// row; keep the two in step. Notes on the mapping:
//   - "R W, minus the management types" (skill, bus) is split into a plain
//     type and a management type; "W only granted types" (integration, bus)
//     into a granted type ("speak") and one not granted;
//   - the row "another device's chorus/v1/<other>/..." is spelled out for
//     every class of the tree on pi-2: nothing for the device and its skill,
//     the same cells as the own-device rows for integration and operator
//     ("any device");
//   - `homeassistant/status` lies under `homeassistant/#`, so the discovery
//     row's R applies to it as well as the integration's W;
//   - the Ret column: only a device's agent retains, and only its four state
//     topics (the cross-cutting rule "Retained publishes").
var aclMatrix = []matrixRow{
	{"availability", "chorus/v1/pi-1/availability", [4]string{"RWT", "", "R", "R"}},
	{"birth", "chorus/v1/pi-1/birth", [4]string{"RWT", "", "R", "R"}},
	{"connectivity", "chorus/v1/pi-1/connectivity", [4]string{"RWT", "", "R", "R"}},
	{"skills", "chorus/v1/pi-1/skills", [4]string{"RWT", "", "R", "R"}},
	{"desired", "chorus/v1/pi-1/desired", [4]string{"R", "", "R", "R"}},
	{"update (controller's state)", "chorus/v1/pi-1/skill/hello/update", [4]string{"R", "", "R", "R"}},
	{"bus, granted type", "chorus/v1/pi-1/bus/speak", [4]string{"RW", "RW", "RW", "RW"}},
	{"bus, other type", "chorus/v1/pi-1/bus/recognizer_loop:utterance", [4]string{"RW", "RW", "R", "RW"}},
	{"bus, management type", "chorus/v1/pi-1/bus/ovos.skills.install", [4]string{"RW", "R", "R", "RW"}},
	{"skill set", "chorus/v1/pi-1/skill/hello/set", [4]string{"R", "", "RW", "R"}},
	{"update/set", "chorus/v1/pi-1/skill/hello/update/set", [4]string{"R", "", "RW", "R"}},

	{"other device's availability", "chorus/v1/pi-2/availability", [4]string{"", "", "R", "R"}},
	{"other device's birth", "chorus/v1/pi-2/birth", [4]string{"", "", "R", "R"}},
	{"other device's connectivity", "chorus/v1/pi-2/connectivity", [4]string{"", "", "R", "R"}},
	{"other device's skills", "chorus/v1/pi-2/skills", [4]string{"", "", "R", "R"}},
	{"other device's desired", "chorus/v1/pi-2/desired", [4]string{"", "", "R", "R"}},
	{"other device's update", "chorus/v1/pi-2/skill/hello/update", [4]string{"", "", "R", "R"}},
	{"other device's bus, granted type", "chorus/v1/pi-2/bus/speak", [4]string{"", "", "RW", "RW"}},
	{"other device's bus, other type", "chorus/v1/pi-2/bus/recognizer_loop:utterance", [4]string{"", "", "R", "RW"}},
	{"other device's bus, management type", "chorus/v1/pi-2/bus/ovos.skills.install", [4]string{"", "", "R", "RW"}},
	{"other device's skill set", "chorus/v1/pi-2/skill/hello/set", [4]string{"", "", "RW", "R"}},
	{"other device's update/set", "chorus/v1/pi-2/skill/hello/update/set", [4]string{"", "", "RW", "R"}},

	{"gateway availability", "chorus/v1/gateway/availability", [4]string{"", "", "R", "R"}},
	{"homeassistant status", "homeassistant/status", [4]string{"", "", "RW", "R"}},
	{"homeassistant discovery", "homeassistant/switch/chorus_pi-1_hello/config", [4]string{"", "", "R", "R"}},
	{"$SYS", "$SYS/chorus/matrix", [4]string{"", "", "", "R"}},
}

// matrixFleet starts a broker with the matrix's accounts and no publish rate
// limits (the matrix publishes more than a skill's burst).
func matrixFleet(t *testing.T) (*broker.Broker, map[string]func(t *testing.T, id string) *brokertest.Client) {
	t.Helper()
	dev := brokertest.NewDevice(t, "pi-1")
	other := brokertest.NewDevice(t, "pi-2")
	intg, intgSecret := brokertest.NewIntegration(t, "ha", "speak")
	op, opSecret := brokertest.NewOperator(t, "alice")
	// The matrix is about topics: rate and connection limits (tested on
	// their own) are off, as each role connects many times here.
	b := brokertest.Start(t, brokertest.Unlimited(), dev.Account, other.Account, intg, op)
	connect := map[string]func(t *testing.T, id string) *brokertest.Client{
		"device": func(t *testing.T, id string) *brokertest.Client {
			return brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1/" + id})
		},
		"skill": func(t *testing.T, id string) *brokertest.Client {
			return brokertest.MustConnect(t, b.Addr(), skillcred.Username("pi-1", "s"), skillcred.Mint(dev.Key, 1, "pi-1", "s"), brokertest.ConnectOptions{ClientID: skillcred.Username("pi-1", "s") + "/" + id})
		},
		"integration": func(t *testing.T, id string) *brokertest.Client {
			return brokertest.MustConnect(t, b.Addr(), "integration:ha", intgSecret, brokertest.ConnectOptions{ClientID: id})
		},
		"operator": func(t *testing.T, id string) *brokertest.Client {
			return brokertest.MustConnect(t, b.Addr(), "operator:alice", opSecret, brokertest.ConnectOptions{ClientID: id})
		},
	}
	return b, connect
}

// pubBarrier is a topic every role may publish (a granted type for the
// integration) and read, used to prove that nothing was delivered before it.
func pubBarrier(role string) string {
	if role == "integration" {
		return "chorus/v1/pi-1/skill/barrier/set"
	}
	return "chorus/v1/pi-1/bus/barrier"
}

const subBarrier = "chorus/v1/pi-1/bus/barrier"

// TestACLMatrix tries every (role × topic class × publish / retained publish /
// subscribe) combination against a real broker. Promise: a client can do
// exactly what its cell of docs/security.md's matrix says: an allowed publish
// is accepted and delivered, a refused one is answered 0x87 and reaches no
// subscriber; an allowed subscription receives the topic's messages, a
// refused one is answered 0x87 and receives nothing.
func TestACLMatrix(t *testing.T) {
	b, connect := matrixFleet(t)

	// Everything published by a client reaches this in-process subscriber, in
	// the order the client's publishes were accepted.
	// The subscribe cases below publish inline too, so every publish case
	// tells its messages apart by a payload of its own.
	type delivery struct{ topic, payload string }
	seen := make(chan delivery, 4096)
	for _, f := range []string{"#", "$SYS/chorus/#"} {
		unsub, err := b.Subscribe(f, func(m broker.Message) { seen <- delivery{m.Topic, string(m.Payload)} })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(unsub)
	}
	// delivered drains seen up to the barrier and reports whether the
	// case's message came before it.
	delivered := func(t *testing.T, msg, barrier delivery) bool {
		t.Helper()
		got := false
		deadline := time.After(wait)
		for {
			select {
			case s := <-seen:
				if s == barrier {
					return got
				}
				got = got || s == msg
			case <-deadline:
				t.Fatalf("barrier %s not delivered", barrier)
				return false
			}
		}
	}

	n := 0
	for i, role := range matrixRoles {
		pub := connect[role](t, "pub-"+role)
		for _, row := range aclMatrix {
			cell := row.cells[i]
			for _, retain := range []bool{false, true} {
				want := strings.Contains(cell, "W")
				verb := "publish"
				if retain {
					want = strings.Contains(cell, "T")
					verb = "retain"
				}
				n++
				msg := delivery{row.topic, string(payloadFor(row.topic, fmt.Sprintf("p%d", n)))}
				barrier := delivery{pubBarrier(role), string(payloadFor(pubBarrier(role), fmt.Sprintf("b%d", n)))}
				t.Run(role+"/"+verb+"/"+row.class, func(t *testing.T) {
					rc := pub.Pub(t, row.topic, []byte(msg.payload), retain)
					if rc := pub.Pub(t, barrier.topic, []byte(barrier.payload), false); rc != 0 {
						t.Fatalf("barrier publish: reason %#x", rc)
					}
					got := delivered(t, msg, barrier)
					switch {
					case want && (rc != 0 || !got):
						t.Fatalf("%s %s: reason %#x, delivered %v; the matrix allows it (cell %q)", verb, row.topic, rc, got, cell)
					case !want && (rc != 0x87 || got):
						t.Fatalf("%s %s: reason %#x, delivered %v; the matrix refuses it (cell %q), want 0x87 and no delivery", verb, row.topic, rc, got, cell)
					}
				})
			}
		}

		for j, row := range aclMatrix {
			cell := row.cells[i]
			t.Run(role+"/subscribe/"+row.class, func(t *testing.T) {
				want := strings.Contains(cell, "R")
				c := connect[role](t, fmt.Sprintf("sub-%s-%d", role, j))
				if rc := c.Sub(t, subBarrier); rc >= 0x80 {
					t.Fatalf("barrier subscribe: reason %#x", rc)
				}
				rc := c.Sub(t, row.topic)
				if want != (rc < 0x80) {
					t.Fatalf("subscribe %s: reason %#x; the matrix says %q", row.topic, rc, cell)
				}
				if !want && rc != 0x87 {
					t.Fatalf("subscribe %s: reason %#x, want 0x87", row.topic, rc)
				}
				// The controller publishes the topic (inline publishes bypass
				// the ACL), then the barrier.
				for _, topic := range []string{row.topic, subBarrier} {
					if err := b.Publish(broker.Message{Topic: topic, Payload: []byte("ON")}); err != nil {
						t.Fatal(err)
					}
				}
				// Drain retained messages of earlier publishes first: the
				// subscription above delivered them before the barrier.
				got := false
				for done := false; !done; {
					m, ok := c.Next(wait)
					if !ok {
						t.Fatalf("barrier not received")
					}
					switch m.Topic {
					case subBarrier:
						done = true
					case row.topic:
						got = true
					}
				}
				if got != want {
					t.Fatalf("received %s = %v; the matrix says %q", row.topic, got, cell)
				}
				c.Close()
			})
		}
	}
}

// TestSkillCannotPublishStateOrDesired: a skill that tries to publish its
// device's availability or desired (or any state topic), retained or not, is
// refused and no subscriber sees it.
func TestSkillCannotPublishStateOrDesired(t *testing.T) {
	b, connect := matrixFleet(t)
	watcher := connect["operator"](t, "watch")
	watcher.Sub(t, "chorus/v1/#")
	s := connect["skill"](t, "s")
	for _, topic := range []string{
		"chorus/v1/pi-1/availability", "chorus/v1/pi-1/desired", "chorus/v1/pi-1/birth",
		"chorus/v1/pi-1/connectivity", "chorus/v1/pi-1/skills",
	} {
		for _, retain := range []bool{false, true} {
			if rc := s.Pub(t, topic, []byte("offline"), retain); rc != 0x87 {
				t.Fatalf("skill publish %s (retain %v): reason %#x, want 0x87", topic, retain, rc)
			}
		}
	}
	s.Pub(t, "chorus/v1/pi-1/bus/barrier", []byte(`{"type":"barrier"}`), false)
	if m, ok := watcher.Next(wait); !ok || m.Topic != "chorus/v1/pi-1/bus/barrier" {
		t.Fatalf("first delivery = %+v, want only the barrier", m)
	}
	for _, topic := range []string{"chorus/v1/pi-1/availability", "chorus/v1/pi-1/desired"} {
		if b.HasRetained(topic) {
			t.Fatalf("%s retained after the skill's refused publish", topic)
		}
	}
}

// TestDeviceCannotReachOtherDevice: a device that tries another device's
// topics, to publish, retain, subscribe or leave a Will there, is refused and
// the other device sees nothing.
func TestDeviceCannotReachOtherDevice(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	other := brokertest.NewDevice(t, "pi-2")
	b := brokertest.Start(t, broker.Config{}, dev.Account, other.Account)
	victim := brokertest.MustConnect(t, b.Addr(), "pi-2", other.Secret, brokertest.ConnectOptions{ClientID: "pi-2"})
	victim.Sub(t, "chorus/v1/pi-2/#")
	d := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1"})
	for _, topic := range []string{
		"chorus/v1/pi-2/availability", "chorus/v1/pi-2/birth", "chorus/v1/pi-2/skills", "chorus/v1/pi-2/desired",
		"chorus/v1/pi-2/bus/speak", "chorus/v1/pi-2/skill/hello/set", "chorus/v1/pi-2/skill/hello/update/set",
	} {
		for _, retain := range []bool{false, true} {
			if rc := d.Pub(t, topic, []byte("ON"), retain); rc != 0x87 {
				t.Fatalf("pi-1 publish %s (retain %v): reason %#x, want 0x87", topic, retain, rc)
			}
		}
	}
	for _, f := range []string{"chorus/v1/pi-2/#", "chorus/v1/pi-2/bus/+", "chorus/v1/+/availability", "chorus/v1/#"} {
		if rc := d.Sub(t, f); rc != 0x87 {
			t.Fatalf("pi-1 subscribe %s: reason %#x, want 0x87", f, rc)
		}
	}
	// The victim's own barrier arrives first: nothing of pi-1's got through.
	victim.Pub(t, "chorus/v1/pi-2/bus/barrier", []byte(`{"type":"barrier"}`), false)
	if m, ok := victim.Next(wait); !ok || m.Topic != "chorus/v1/pi-2/bus/barrier" {
		t.Fatalf("pi-2's first delivery = %+v, want only its barrier", m)
	}
	if b.HasRetained("chorus/v1/pi-2/availability") {
		t.Fatal("pi-1 left a retained availability on pi-2")
	}
}

// TestIntegrationCannotInstall: an integration may not send the install
// types on any device's bus unless it was granted them (`chorus fleet
// integration add --allow TYPE`), and a grant covers only the types named.
func TestIntegrationCannotInstall(t *testing.T) {
	dev := brokertest.NewDevice(t, "pi-1")
	plain, plainSecret := brokertest.NewIntegration(t, "ha", "speak")
	granted, grantedSecret := brokertest.NewIntegration(t, "installer", "ovos.skills.install")
	b := brokertest.Start(t, broker.Config{}, dev.Account, plain, granted)
	agent := brokertest.MustConnect(t, b.Addr(), "pi-1", dev.Secret, brokertest.ConnectOptions{ClientID: "pi-1"})
	agent.Sub(t, "chorus/v1/pi-1/bus/+")
	ha := brokertest.MustConnect(t, b.Addr(), "integration:ha", plainSecret, brokertest.ConnectOptions{ClientID: "ha"})
	inst := brokertest.MustConnect(t, b.Addr(), "integration:installer", grantedSecret, brokertest.ConnectOptions{ClientID: "inst"})

	for _, typ := range []string{"ovos.skills.install", "ovos.pip.install", "ovos.skills.uninstall", "skillmanager.activate"} {
		payload := []byte(`{"type":"` + typ + `","data":{"url":"https://example.invalid/evil"}}`)
		if rc := ha.Pub(t, "chorus/v1/pi-1/bus/"+typ, payload, false); rc != 0x87 {
			t.Fatalf("integration without grant, %s: reason %#x, want 0x87", typ, rc)
		}
	}
	if rc := inst.Pub(t, "chorus/v1/pi-1/bus/ovos.pip.install", []byte(`{"type":"ovos.pip.install"}`), false); rc != 0x87 {
		t.Fatalf("integration granted only ovos.skills.install, ovos.pip.install: reason %#x, want 0x87", rc)
	}
	ha.Pub(t, "chorus/v1/pi-1/bus/speak", []byte(`{"type":"speak"}`), false)
	if m, ok := agent.Next(wait); !ok || m.Topic != "chorus/v1/pi-1/bus/speak" {
		t.Fatalf("the agent's first delivery = %+v, want only the granted speak", m)
	}

	// Granted explicitly, the type goes through.
	if rc := inst.Pub(t, "chorus/v1/pi-1/bus/ovos.skills.install", []byte(`{"type":"ovos.skills.install"}`), false); rc != 0 {
		t.Fatalf("integration granted ovos.skills.install: reason %#x, want 0", rc)
	}
	agent.Expect(t, "chorus/v1/pi-1/bus/ovos.skills.install", wait)
}
