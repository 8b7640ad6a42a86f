package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/fleet/sqlite"
	"github.com/chorus-edge/chorus/gateway/poll"
)

const (
	haAvail   = "chorus/v1/pi.kitchen_1/availability"
	haDesired = "chorus/v1/pi.kitchen_1/desired"
)

// drainRetained reads what w holds until nothing comes for quiet.
func drainRetained(w *brokertest.Client, quiet time.Duration) {
	for {
		if _, ok := w.Next(quiet); !ok {
			return
		}
	}
}

// TestHARemovalConfigFirstOnce: removing a device clears its Home Assistant
// discovery config before its availability topic (HA's MQTT discovery would
// otherwise see entities without availability), and the config, update
// state and desired document are each cleared once (issue 16 §7).
func TestHARemovalConfigFirstOnce(t *testing.T) {
	e, a, _, _ := haSetup(t)
	goOffline(t, e, a)
	w := e.watcher(haConfig)
	for _, f := range []string{haAvail, haDesired, haUpdate} {
		w.Sub(t, f)
	}
	drainRetained(w, time.Second)

	if err := e.ctl.RemoveDevice(context.Background(), "test", haDev); err != nil {
		t.Fatal(err)
	}
	var order []string
	clears := map[string]int{}
	for {
		// The removed device's queued pass runs within milliseconds; a
		// second clear sequence would come in this window.
		m, ok := w.Next(2 * time.Second)
		if !ok {
			break
		}
		if len(m.Payload) != 0 {
			t.Fatalf("%s = %q after removal", m.Topic, m.Payload)
		}
		order = append(order, m.Topic)
		clears[m.Topic]++
	}
	for _, tp := range []string{haConfig, haAvail, haDesired, haUpdate} {
		if clears[tp] != 1 {
			t.Errorf("%s cleared %d times, want once (sequence %v)", tp, clears[tp], order)
		}
	}
	if idx(order, haConfig) > idx(order, haAvail) {
		t.Errorf("clear order %v: the discovery config must go before the availability", order)
	}
}

func idx(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return len(s)
}

// TestRemovalClearsSurviveCrash: the gateway dies right after `device rm`
// committed, before any clear reached the broker (the controller is closed
// and the device deleted from the store directly, which is that state).
// The next start re-derives the clears from the registry: no retained
// discovery config, update state, desired document or availability of the
// device is left (issue 16 §7).
func TestRemovalClearsSurviveCrash(t *testing.T) {
	e, a, _, _ := haSetup(t)
	goOffline(t, e, a)
	nextUpdateRetained(t, e)
	e.stop()
	db, err := sqlite.Open(e.dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteDevice(context.Background(), haDev); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, tp := range []string{haConfig, haUpdate, haDesired, haAvail} {
		if !retained(t, e, tp) {
			t.Fatalf("%s not retained before the restart: the crash lost nothing to repair", tp)
		}
	}

	e.start()
	for _, tp := range []string{haConfig, haUpdate, haDesired, haAvail} {
		poll.Until(t, tp+" cleared", waitFor, func() bool { return !retained(t, e, tp) })
	}
	// And they stay cleared: a later pass publishes nothing for the device.
	e.ctl.Kick()
	w := e.watcher(haConfig)
	for _, f := range []string{haAvail, haDesired, haUpdate} {
		w.Sub(t, f)
	}
	if m, ok := w.Next(time.Second); ok {
		t.Fatalf("%s = %q after the restart's clears", m.Topic, m.Payload)
	}
}

// retained reports whether a fresh subscriber gets a non-empty retained
// message on the exact topic tp.
func retained(t *testing.T, e *env, tp string) bool {
	t.Helper()
	w := e.watcher(tp)
	defer w.Close()
	m, ok := w.Next(300 * time.Millisecond)
	return ok && m.Retain && len(m.Payload) > 0
}

func nextUpdateRetained(t *testing.T, e *env) {
	t.Helper()
	poll.Until(t, "update state retained", waitFor, func() bool { return retained(t, e, haUpdate) })
}

// goOffline has the agent say offline and disconnect cleanly (no Will): the
// controller stops re-publishing the desired document it is behind on.
func goOffline(t *testing.T, e *env, a *agent) {
	t.Helper()
	a.pub(haAvail, []byte("offline"))
	a.close()
	poll.Until(t, "offline", waitFor, func() bool {
		d, _ := e.ctl.GetDevice(context.Background(), haDev)
		return d != nil && !d.Online
	})
}
