package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// gate holds one message, the first that match accepts, at a point the test
// chooses, until the test releases it: the interleavings of two publishers
// (or of a reconcile pass and an API call) that a real broker and store
// produce only by chance.
type gate struct {
	match   func(broker.Message) bool
	entered chan struct{} // closed when the message is held
	release chan struct{} // closed by the test to let it through
}

func newGate(match func(broker.Message) bool) *gate {
	return &gate{match: match, entered: make(chan struct{}), release: make(chan struct{})}
}

// wait waits until the gate holds its message.
func (g *gate) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(waitFor):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// hold blocks until the test releases the gate (or waitFor passes, so a
// failing test does not hang).
func (g *gate) hold() {
	close(g.entered)
	select {
	case <-g.release:
	case <-time.After(waitFor):
	}
}

// gateSlot is an armed gate, fired once.
type gateSlot struct {
	mu sync.Mutex
	g  *gate
}

func (s *gateSlot) arm(g *gate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.g = g
}

// pass holds m if the armed gate matches it.
func (s *gateSlot) pass(m broker.Message) {
	s.mu.Lock()
	g := s.g
	if g == nil || !g.match(m) {
		s.mu.Unlock()
		return
	}
	s.g = nil
	s.mu.Unlock()
	g.hold()
}

// gatedBroker is the real broker as the controller sees it. in holds a
// delivery to the controller's subscriptions (on the publisher's goroutine,
// after the broker retained the message); out holds a publish of the
// controller before it reaches the broker.
type gatedBroker struct {
	*broker.Broker
	in, out gateSlot
}

func (g *gatedBroker) Subscribe(filter string, h func(broker.Message)) (func(), error) {
	return g.Broker.Subscribe(filter, func(m broker.Message) {
		g.in.pass(m)
		h(m)
	})
}

func (g *gatedBroker) Publish(m broker.Message) error {
	g.out.pass(m)
	return g.Broker.Publish(m)
}

// gatedStore is the real store; its gate holds a GetDevice of one device
// after the device was read, as if the reading pass were slow.
type gatedStore struct {
	controller.Store
	get gateSlot
}

func (s *gatedStore) GetDevice(ctx context.Context, id string) (*fleet.Device, error) {
	d, err := s.Store.GetDevice(ctx, id)
	s.get.pass(broker.Message{Topic: id})
	return d, err
}

// availabilityOf matches a message on pi-1's availability topic.
func availabilityOf(payload, session string, republish bool) func(broker.Message) bool {
	return func(m broker.Message) bool {
		if m.Topic != availTopic || string(m.Payload) != payload {
			return false
		}
		var s, origin string
		for _, u := range m.User {
			switch u.Key {
			case "session":
				s = u.Value
			case "origin":
				origin = u.Value
			}
		}
		return s == session && (origin == "gateway") == republish
	}
}

// TestRepairRaceWithDevice: a repair and the device's own graceful offline
// race on the topic the way two publishers do on mochi, which retains, then
// delivers: the device's "offline" of session 7 is retained first and
// delivered to the controller last, after the repair ("online" of session 7)
// was retained and delivered. The controller then holds the device's word,
// which is what it wants, while the broker retains the repair. The re-check
// after the repair must restate "offline", and then stop.
func TestRepairRaceWithDevice(t *testing.T) {
	t.Parallel()
	const settle = 100 * time.Millisecond
	tests := []struct {
		name    string
		trigger availability // what the repair repairs, published by the gateway's inline client
	}{
		{name: "repair of a late Will", trigger: availability{payload: "offline", session: "6"}},
		{name: "repair of an older re-publish", trigger: availability{payload: "offline", session: "6", origin: "gateway"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gb := &gatedBroker{}
			e, connect := newIntegEnvWith(t, integOptions{settle: settle,
				broker: func(b *broker.Broker) controller.Broker { gb.Broker = b; return gb }})
			ctx := context.Background()
			a := e.startAgent(e.addDevice("pi-1"), 7, "silent")
			poll.Until(t, "online", waitFor, func() bool { d, _ := e.ctl.GetDevice(ctx, "pi-1"); return d != nil && d.Online })
			live := connect("live")
			live.Sub(t, availTopic)
			nextAvailability(t, live, "the retained state", func(availability) bool { return true })

			// The device's offline: retained now, delivered to the controller
			// only after the repair.
			held := newGate(availabilityOf("offline", "7", false))
			gb.in.arm(held)
			sent := make(chan struct{})
			go func() { defer close(sent); a.pub(availTopic, []byte("offline")) }()
			held.wait(t, "the device's offline to be retained")

			m := broker.Message{Topic: availTopic, Payload: []byte(tc.trigger.payload), QoS: 1, Retain: true,
				User: []broker.UserProperty{{Key: "session", Value: tc.trigger.session}}}
			if tc.trigger.origin != "" {
				m.User = append(m.User, broker.UserProperty{Key: "origin", Value: tc.trigger.origin})
			}
			if err := e.b.Publish(m); err != nil {
				t.Fatal(err)
			}
			// The repair reaches the controller before this subscriber.
			nextAvailability(t, live, "the repair", func(a availability) bool {
				return a == availability{payload: "online", session: "7", origin: "gateway"}
			})
			close(held.release)
			<-sent

			waitRetained(t, connect, availability{payload: "offline", session: "7"})
			nextAvailability(t, live, "the re-check's offline", func(a availability) bool {
				return a == availability{payload: "offline", session: "7", origin: "gateway"}
			})
			// The topic is quiet: the re-check after that one finds it settled.
			if m, ok := nextOn(live, availTopic, 10*settle); ok {
				t.Fatalf("re-published %+v again on a quiet topic", readAvailability(m))
			}
			if d, _ := e.ctl.GetDevice(ctx, "pi-1"); d.Online || d.BirthSession != 7 {
				t.Fatalf("controller: online=%v session=%d, want offline in session 7", d.Online, d.BirthSession)
			}
		})
	}
}
