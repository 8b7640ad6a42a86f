package controller_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet/controller"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// TestRemoveDeviceDuringReconcile: a device is removed while a reconcile
// pass that loaded it is still running. Whatever that pass remembers or
// publishes after RemoveDevice's own forget and clearing goes again: the
// fleet summary settles on no device, and no retained topic of the device
// (availability and desired included) is left.
func TestRemoveDeviceDuringReconcile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// hold registers pi-1, arms a gate that stops a pass of it and
		// triggers the pass.
		hold func(t *testing.T, e *env, gb *gatedBroker, gs *gatedStore) *gate
	}{
		{name: "pass held after loading the device", hold: func(t *testing.T, e *env, _ *gatedBroker, gs *gatedStore) *gate {
			onlineAgent(t, e)
			g := newGate(func(m broker.Message) bool { return m.Topic == "pi-1" })
			gs.get.arm(g)
			if _, err := e.ctl.SetTags(context.Background(), "test", "pi-1", []string{"kitchen"}); err != nil {
				t.Fatal(err)
			}
			return g
		}},
		{name: "pass held publishing the desired document", hold: func(t *testing.T, e *env, gb *gatedBroker, _ *gatedStore) *gate {
			g := newGate(func(m broker.Message) bool { return m.Topic == "chorus/v1/pi-1/desired" && len(m.Payload) > 0 })
			gb.out.arm(g)
			e.addDevice("pi-1") // its first pass publishes the document
			return g
		}},
		{name: "pass held publishing an availability repair", hold: func(t *testing.T, e *env, gb *gatedBroker, _ *gatedStore) *gate {
			onlineAgent(t, e)
			g := newGate(availabilityOf("online", "7", true))
			gb.out.arm(g)
			will := broker.Message{Topic: availTopic, Payload: []byte("offline"), QoS: 1, Retain: true,
				User: []broker.UserProperty{{Key: "session", Value: "6"}}}
			if err := e.b.Publish(will); err != nil {
				t.Fatal(err)
			}
			return g
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gb, gs := &gatedBroker{}, &gatedStore{}
			e, _ := newIntegEnvWith(t, integOptions{
				broker: func(b *broker.Broker) controller.Broker { gb.Broker = b; return gb },
				store:  func(s controller.Store) controller.Store { gs.Store = s; return gs },
			})
			ctx := context.Background()
			w := e.watcher(gwFleet)

			g := tc.hold(t, e, gb, gs)
			g.wait(t, "the reconcile pass to be held")
			if err := e.ctl.RemoveDevice(ctx, "test", "pi-1"); err != nil {
				t.Fatal(err)
			}
			close(g.release)

			if got, want := settledFleet(t, w), map[string]float64{"devices": 0, "devices_online": 0, "skills_loaded": 0, "rollouts_active": 0}; !matches(got, want) {
				t.Fatalf("fleet summary = %v, want %v", got, want)
			}
			poll.Until(t, "no retained topic of pi-1", waitFor, func() bool {
				// Exact filters: mochi reads a wildcard's retained messages
				// without the topic index's lock, which the race detector
				// sees racing a retain.
				r := e.watcher(availTopic)
				defer r.Close()
				for _, k := range []string{"birth", "connectivity", "skills", "desired"} {
					r.Sub(t, "chorus/v1/pi-1/"+k)
				}
				_, retained := r.Next(200 * time.Millisecond)
				return !retained
			})
		})
	}
}

// onlineAgent registers pi-1 and starts its agent in session 7, online.
func onlineAgent(t *testing.T, e *env) {
	t.Helper()
	e.startAgent(e.addDevice("pi-1"), 7, "silent")
	poll.Until(t, "online", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(context.Background(), "pi-1")
		return d != nil && d.Online
	})
}

// settledFleet returns the last fleet summary w receives before none comes
// for twice the summary's least gap (1 s), failing if none comes at all.
func settledFleet(t *testing.T, w *brokertest.Client) map[string]any {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	var last map[string]any
	for {
		m, ok := nextOn(w, gwFleet, 2*time.Second)
		if !ok {
			if last == nil {
				t.Fatal("no fleet summary")
			}
			return last
		}
		last = nil
		if err := json.Unmarshal(m.Payload, &last); err != nil {
			t.Fatalf("fleet summary %q: %v", m.Payload, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet summary still changing: %v", last)
		}
	}
}
