package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/broker/brokertest"
	"github.com/chorus-edge/chorus/gateway/poll"
)

// newLiveEnv is a gateway whose presence follows the broker's live
// connections, with a grace of grace.
func newLiveEnv(t *testing.T, grace time.Duration) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), grace: grace}
	e.b = brokertest.Start(t, brokertest.Unlimited())
	acct, secret := brokertest.NewOperator(t, "watcher")
	e.opName, e.opSecret, e.local = acct.Username, secret, []broker.Account{acct}
	e.dbPath = e.dir + "/fleet.db"
	e.start()
	return e
}

func (e *env) online(id string) bool {
	d, err := e.db.GetDevice(context.Background(), id)
	return err == nil && d.Online
}

// retainedAvailability reads the device's retained availability as a new
// subscriber (Home Assistant) would.
func (e *env) retainedAvailability(id string) string {
	e.t.Helper()
	w := e.watcher("chorus/v1/" + id + "/availability")
	defer w.Close()
	m, ok := w.Next(2 * time.Second)
	if !ok {
		return ""
	}
	return string(m.Payload)
}

// A re-imaged agent (fresh data dir: its session counter starts at 1 again)
// is online on its first connection (issue 16, point 2).
func TestReimagedDeviceIsOnlineAtOnce(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, time.Second)
	creds := e.addDevice("pi")
	old := e.startAgent(creds, 9, "ok")
	poll.Until(t, "online with session 9", waitFor, func() bool { return e.online("pi") })
	closing := time.Now()
	old.close()
	poll.Until(t, "offline once its connection is gone", waitFor, func() bool { return !e.online("pi") })
	if d, _ := e.db.GetDevice(context.Background(), "pi"); d.LastSeen.Before(closing.Add(-time.Second)) || d.LastSeen.After(closing.Add(5*time.Second)) {
		t.Errorf("LAST SEEN %v, want when the connection closed (about %v), not when it was marked offline", d.LastSeen, closing)
	}

	e.startAgent(creds, 1, "ok")
	poll.Until(t, "online with session 1", waitFor, func() bool { return e.online("pi") })
	// Heard as long as its connection lives, not only when it connected:
	// the LAST SEEN shown moves on past the stored connect time.
	stored, _ := e.db.GetDevice(context.Background(), "pi")
	poll.Until(t, "LAST SEEN past the connect time while connected", waitFor, func() bool {
		d, err := e.ctl.GetDevice(context.Background(), "pi")
		return err == nil && d.LastSeen.After(stored.LastSeen)
	})
	poll.Until(t, "retained availability online", waitFor, func() bool { return e.retainedAvailability("pi") == "online" })
	d, _ := e.db.GetDevice(context.Background(), "pi")
	if d.BirthSession != 1 {
		t.Errorf("birth session %d, want 1", d.BirthSession)
	}
}

// An "offline" of another session while the device holds a live connection
// (a late Will of an earlier connection) does not mark it offline, and the
// retained availability is restated.
func TestLateOfflineWhileConnectedIsRestated(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, time.Second)
	creds := e.addDevice("pi")
	a := e.startAgent(creds, 1, "ok")
	poll.Until(t, "online", waitFor, func() bool { return e.online("pi") })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := a.c.Publish(ctx, &paho.Publish{Topic: "chorus/v1/pi/availability", QoS: 1, Retain: true, Payload: []byte("offline"),
		Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "session", Value: "7"}}}})
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "retained availability restated online", waitFor, func() bool { return e.retainedAvailability("pi") == "online" })
	if !e.online("pi") {
		t.Fatal("a late offline of session 7 marked a connected device offline")
	}
}

// After a gateway restart, a device recorded online whose agent holds no
// live connection is marked offline within the grace: registry and the
// retained availability Home Assistant reads; LAST SEEN is not rewritten to
// the restart (issue 16, point 3). One that reconnected stays online.
func TestRestartMarksDevicesWithoutAConnectionOffline(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, 2*time.Second)
	gone, stays := e.addDevice("gone"), e.addDevice("stays")
	g := e.startAgent(gone, 3, "ok")
	e.startAgent(stays, 4, "ok")
	poll.Until(t, "both online", waitFor, func() bool { return e.online("gone") && e.online("stays") })
	before, _ := e.db.GetDevice(context.Background(), "gone")

	e.stop()
	g.close() // a clean disconnect: no Will, the retained "online" stays
	// The broker notices the close on its own goroutine; one it had not yet
	// noticed at the restart is a disconnect after it, and LAST SEEN rightly
	// becomes that moment.
	poll.Until(t, "the broker to see gone's connection closed", waitFor, func() bool { return !e.b.Connected(gone.Username) })
	e.start()

	start := time.Now()
	poll.Until(t, "gone offline", waitFor, func() bool { return !e.online("gone") })
	if took := time.Since(start); took < time.Second {
		t.Errorf("marked offline after %s, before its 2s grace", took)
	}
	poll.Until(t, "retained availability offline", waitFor, func() bool { return e.retainedAvailability("gone") == "offline" })
	after, _ := e.db.GetDevice(context.Background(), "gone")
	if after.LastSeen.Before(before.LastSeen) || after.LastSeen.After(start) {
		t.Errorf("LAST SEEN %v, want between the last word %v and the restart %v", after.LastSeen, before.LastSeen, start)
	}
	if !e.online("stays") {
		t.Error("a device with a live connection was marked offline")
	}
	if got := e.retainedAvailability("stays"); got != "online" {
		t.Errorf("retained availability of the connected device %q", got)
	}
}
