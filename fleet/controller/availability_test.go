package controller_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/poll"
)

const availTopic = "chorus/v1/pi-1/availability"

// newIntegEnv is newEnv with an integration account (what Home Assistant
// uses) and a way to connect clients with it.
func newIntegEnv(t *testing.T) (*env, func(id string) *brokertest.Client) {
	t.Helper()
	return newIntegEnvWith(t, integOptions{})
}

// integOptions change what the controller of newIntegEnvWith is given.
type integOptions struct {
	broker func(*broker.Broker) controller.Broker  // wraps the real broker (gatedBroker)
	store  func(controller.Store) controller.Store // wraps the real store (gatedStore)
	settle time.Duration                           // the availability re-check interval (2 s)
}

func newIntegEnvWith(t *testing.T, o integOptions) (*env, func(id string) *brokertest.Client) {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	e.b = brokertest.Start(t, broker.Config{})
	op, opSecret := brokertest.NewOperator(t, "watcher")
	integ, integSecret := brokertest.NewIntegration(t, "ha")
	e.opName, e.opSecret, e.local = op.Username, opSecret, []broker.Account{op, integ}
	e.dbPath = filepath.Join(e.dir, "fleet.db")
	db, err := sqlite.Open(e.dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	var store controller.Store = db
	if o.store != nil {
		store = o.store(db)
	}
	var b controller.Broker = e.b
	if o.broker != nil {
		b = o.broker(e.b)
	}
	ctl, err := controller.New(controller.Config{
		Store: store, Broker: b, LocalAccounts: e.local, ArtifactDir: filepath.Join(e.dir, "artifacts"),
		ValidateSkill: validateSkill, MQTTURL: e.b.URL(), ServerURL: "http://127.0.0.1:0",
		Logger: brokertest.Logger(t), Tick: 50 * time.Millisecond, RepublishAge: 500 * time.Millisecond,
		HomeAssistant: controller.HomeAssistant{Jitter: func() time.Duration { return 0 }},
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.settle > 0 {
		controller.SetAvailabilitySettle(ctl, o.settle)
	}
	if err := ctl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.db, e.ctl = db, ctl
	t.Cleanup(e.stop)
	return e, func(id string) *brokertest.Client {
		return brokertest.MustConnect(t, e.b.Addr(), integ.Username, integSecret, brokertest.ConnectOptions{ClientID: id})
	}
}

// availability is one message on a device's availability topic.
type availability struct {
	payload, session, origin string
	retained                 bool
}

func readAvailability(m *paho.Publish) availability {
	a := availability{payload: string(m.Payload), retained: m.Retain}
	if m.Properties != nil {
		a.session = m.Properties.User.Get("session")
		a.origin = m.Properties.User.Get("origin")
	}
	return a
}

// retainedAvailability subscribes afresh as an integration and returns the
// retained availability of pi-1 (ok false when none is retained).
func retainedAvailability(t *testing.T, connect func(string) *brokertest.Client) (availability, bool) {
	t.Helper()
	c := connect("poll-" + strconv.FormatInt(time.Now().UnixNano(), 36))
	defer c.Close()
	c.Sub(t, availTopic)
	m, ok := nextOn(c, availTopic, 300*time.Millisecond)
	if !ok {
		return availability{}, false
	}
	return readAvailability(m), true
}

// nextAvailability waits for the next message on pi-1's availability that
// satisfies ok.
func nextAvailability(t *testing.T, w *brokertest.Client, what string, ok func(availability) bool) availability {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		m, got := nextOn(w, availTopic, time.Until(deadline))
		if !got {
			t.Fatalf("no availability message with %s", what)
		}
		if a := readAvailability(m); ok(a) {
			return a
		}
	}
}

// waitRetained polls the retained availability until it is want.
func waitRetained(t *testing.T, connect func(string) *brokertest.Client, want availability) {
	t.Helper()
	var got availability
	poll.Until(t, "retained availability "+want.payload+" of session "+want.session, waitFor, func() bool {
		got, _ = retainedAvailability(t, connect)
		return got.payload == want.payload && got.session == want.session
	})
}

// TestLateWillRepairedForIntegrations: issue #6 end to end. Session 6 of a
// device connects with a delayed Will, session 7 connects and is born, then
// the broker delivers session 6's Will: the controller ignores it, and what
// an integration reads on the retained availability topic ends up "online"
// of session 7 again, and stays so after the settle re-publish.
func TestLateWillRepairedForIntegrations(t *testing.T) {
	t.Parallel()
	e, connect := newIntegEnv(t)
	ctx := context.Background()
	creds := e.addDevice("pi-1")
	live := connect("live")
	live.Sub(t, availTopic)

	// Session 6: its own client id (so session 7 does not take it over)
	// and a Will the broker sends 1 s after the connection ends.
	delay := uint32(1)
	old := brokertest.MustConnect(t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{
		ClientID: "pi-1-old", Expiry: 60,
		Will: &paho.WillMessage{Topic: availTopic, Payload: []byte("offline"), QoS: 1, Retain: true},
		WillProps: &paho.WillProperties{WillDelayInterval: &delay,
			User: paho.UserProperties{{Key: "session", Value: "6"}}},
	})
	pubSession(t, old, availTopic, "online", 6)
	poll.Until(t, "session 6 online", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(ctx, "pi-1")
		return d != nil && d.Online && d.BirthSession == 6
	})

	e.startAgent(creds, 7, "silent") // session 7: online and birth
	poll.Until(t, "session 7 online", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(ctx, "pi-1")
		return d != nil && d.Online && d.BirthSession == 7
	})
	waitRetained(t, connect, availability{payload: "online", session: "7"})

	// Session 6's connection ends with its Will: delivered after 7's birth.
	if err := old.Client.Disconnect(&paho.Disconnect{ReasonCode: 0x04}); err != nil {
		t.Fatal(err)
	}
	// The Will, the repair and the settle re-publish, the last two of
	// session 7 by the gateway. mochi may hand the delayed Will to the
	// controller before this subscriber, so the order is not pinned.
	var will bool
	repairs := 0
	for !will || repairs < 2 {
		a := nextAvailability(t, live, "the Will and two repairs", func(availability) bool { return true })
		switch {
		case a == availability{payload: "offline", session: "6"}:
			will = true
		case a.origin == "gateway":
			if a.payload != "online" || a.session != "7" {
				t.Fatalf("repair = %+v, want online of session 7", a)
			}
			repairs++
		}
	}
	waitRetained(t, connect, availability{payload: "online", session: "7"})
	if d, _ := e.ctl.GetDevice(ctx, "pi-1"); !d.Online || d.BirthSession != 7 {
		t.Fatalf("controller: online=%v session=%d, want online in session 7", d.Online, d.BirthSession)
	}
}

// TestAvailabilityRepair: what the controller re-publishes on pi-1's
// availability topic after a message lands there, for each kind of message.
// The device is online in session 7 unless the case makes it offline first.
func TestAvailabilityRepair(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		offline bool         // session 7's agent said offline first
		inject  availability // published by the gateway's inline client
		want    availability // retained in the end
		repair  bool         // the controller publishes a repair
	}{
		{name: "older session offline (late Will)", inject: availability{payload: "offline", session: "6"},
			want: availability{payload: "online", session: "7"}, repair: true},
		{name: "older session online", inject: availability{payload: "online", session: "5"},
			want: availability{payload: "online", session: "7"}, repair: true},
		{name: "older re-publish", inject: availability{payload: "offline", session: "6", origin: "gateway"},
			want: availability{payload: "online", session: "7"}, repair: true},
		{name: "re-publish that lost to the device's own offline", offline: true,
			inject: availability{payload: "online", session: "7", origin: "gateway"},
			want:   availability{payload: "offline", session: "7"}, repair: true},
		{name: "the device's own offline", inject: availability{payload: "offline", session: "7"},
			want: availability{payload: "offline", session: "7"}},
		{name: "a newer session", inject: availability{payload: "online", session: "8"},
			want: availability{payload: "online", session: "8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, connect := newIntegEnv(t)
			ctx := context.Background()
			a := e.startAgent(e.addDevice("pi-1"), 7, "silent")
			poll.Until(t, "online", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && d.Online })
			if tc.offline {
				a.pub(availTopic, []byte("offline"))
				poll.Until(t, "offline", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && !d.Online })
			}
			live := connect("live")
			live.Sub(t, availTopic)
			nextAvailability(t, live, "the retained state", func(availability) bool { return true })

			m := broker.Message{Topic: availTopic, Payload: []byte(tc.inject.payload), QoS: 1, Retain: true,
				User: []broker.UserProperty{{Key: "session", Value: tc.inject.session}}}
			if tc.inject.origin != "" {
				m.User = append(m.User, broker.UserProperty{Key: "origin", Value: tc.inject.origin})
			}
			if err := e.b.Publish(m); err != nil {
				t.Fatal(err)
			}
			inject := availability{payload: tc.inject.payload, session: tc.inject.session, origin: tc.inject.origin}
			if tc.repair {
				// The injected message and the repair, in either order: the
				// broker hands the injected message to the controller's
				// in-process subscription and to this one in no fixed
				// order, and the repair, another publisher's, can reach
				// this subscriber first (seen once under load).
				want := tc.want
				want.origin = "gateway"
				var injected, repaired bool
				for !injected || !repaired {
					a := nextAvailability(t, live, "the injected message and a repair", func(availability) bool { return true })
					switch {
					case a == inject && !injected:
						injected = true
					case a == want:
						repaired = true
					default:
						t.Fatalf("availability %+v; want the injected %+v and the repair %+v", a, inject, want)
					}
				}
			} else {
				nextAvailability(t, live, "the injected message", func(a availability) bool { return a == inject })
				if m, ok := nextOn(live, availTopic, 500*time.Millisecond); ok {
					t.Fatalf("re-published %+v over the device's own word", readAvailability(m))
				}
			}
			waitRetained(t, connect, tc.want)
			// The controller's view is the device's word, never a re-publish.
			wantOnline := tc.want.payload == "online"
			poll.Until(t, "the controller's view", waitFor, func() bool {
				d, _ := e.ctl.GetDevice(ctx, "pi-1")
				return d != nil && d.Online == wantOnline && strconv.FormatUint(d.BirthSession, 10) == tc.want.session
			})
		})
	}
}

func pubSession(t *testing.T, c *brokertest.Client, topic, payload string, session uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Retain: true, Payload: []byte(payload),
		Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "session", Value: strconv.FormatUint(session, 10)}}}}); err != nil {
		t.Fatalf("publish %s: %v", topic, err)
	}
}

// TestNoRepairAfterRestartWithoutPresence: after a restart the controller
// knows no presence of this run, and the store's online flag may belong to
// an older session than its birth session (a birth does not change it).
// Session 6 said "online", session 7 is born but has said nothing; a late
// Will of session 6 lands while the controller is down. The controller that
// starts must not restate "online" for session 7, which never said so: the
// topic keeps the Will until the device's own word arrives, and from then on
// late Wills are repaired again.
func TestNoRepairAfterRestartWithoutPresence(t *testing.T) {
	t.Parallel()
	e, connect := newIntegEnv(t)
	ctx := context.Background()
	creds := e.addDevice("pi-1")
	old := brokertest.MustConnect(t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: "pi-1-old"})
	pubSession(t, old, availTopic, "online", 6)
	poll.Until(t, "session 6 online", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(ctx, "pi-1")
		return d != nil && d.Online && d.BirthSession == 6
	})
	cur := brokertest.MustConnect(t, e.b.Addr(), creds.Username, creds.Password, brokertest.ConnectOptions{ClientID: "pi-1"})
	pubSession(t, cur, "chorus/v1/pi-1/birth", `{"session":7,"agent_version":"test"}`, 7)
	poll.Until(t, "session 7 born", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(ctx, "pi-1")
		return d != nil && d.Online && d.BirthSession == 7 // online: session 6's word
	})

	e.stop()
	will := broker.Message{Topic: availTopic, Payload: []byte("offline"), QoS: 1, Retain: true,
		User: []broker.UserProperty{{Key: "session", Value: "6"}}}
	if err := e.b.Publish(will); err != nil {
		t.Fatal(err)
	}
	// Exact filters: mochi reads a wildcard's retained messages without the
	// topic index's lock, which the race detector sees racing a retain.
	w := e.watcher(availTopic)
	w.Sub(t, "chorus/v1/pi-1/desired")
	e.start()
	// The start-up pass repairs availability before it publishes the
	// desired document again, and the broker hands one subscriber its
	// messages in order: a repair would be here before the document.
	deadline := time.Now().Add(waitFor)
	for {
		m, ok := w.Next(time.Until(deadline))
		if !ok {
			t.Fatal("no desired document published at start")
		}
		if a := readAvailability(m); m.Topic == availTopic && a.origin == "gateway" {
			t.Fatalf("restated %+v without the device's word in this run", a)
		}
		if m.Topic == "chorus/v1/pi-1/desired" && !m.Retain {
			break
		}
	}
	if got, _ := retainedAvailability(t, connect); got != (availability{payload: "offline", session: "6", retained: true}) {
		t.Fatalf("retained availability = %+v, want session 6's Will", got)
	}

	// The device's own word, then another late Will: repaired.
	pubSession(t, cur, availTopic, "online", 7)
	poll.Until(t, "session 7 online", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(ctx, "pi-1")
		return d != nil && d.Online && d.BirthSession == 7
	})
	waitRetained(t, connect, availability{payload: "online", session: "7"})
	if err := e.b.Publish(will); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the late Will repaired", waitFor, func() bool {
		got, _ := retainedAvailability(t, connect)
		return got == availability{payload: "online", session: "7", origin: "gateway", retained: true}
	})
}
