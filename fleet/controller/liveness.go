package controller

import (
	"context"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Connections is the broker's view of live connections; *broker.Broker
// satisfies it. With it, the controller ties a device's presence to its
// agent's connection (docs/topics.md, Presence):
//
//   - a device is online exactly while its agent holds a live connection and
//     has said "online" over it, whatever its session counter says (a
//     re-imaged device starts again at 1);
//   - an "offline" while the device holds a live connection is a late Will
//     of an earlier connection unless it is of the current session (the
//     agent's own goodbye), and is restated;
//   - a device recorded online without a live connection is marked offline
//     (registry and retained availability) PresenceGrace after the gateway
//     starts or after its last connection closed, whichever is later: the
//     grace lets agents reconnect after a gateway restart without a flap.
//
// Without it (an external broker, whose connections the gateway cannot see)
// presence follows the availability messages and their sessions alone.
type Connections interface {
	Connected(username string) bool
	NotifyDisconnect(fn func(username string))
}

var _ Connections = (*broker.Broker)(nil)

// liveness schedules the presence checks. A check runs on the inbox
// goroutine, the one writer of presence, so it is ordered with the
// device's own availability messages.
type liveness struct {
	conns Connections // nil: off
	grace time.Duration

	mu     sync.Mutex // guards the fields below; never held across I/O
	start  time.Time
	lost   map[string]time.Time   // device -> when its last connection closed (this run)
	timers map[string]*time.Timer // device -> its pending check
	down   bool
}

func newLiveness(conns Connections, grace time.Duration) *liveness {
	return &liveness{conns: conns, grace: grace, lost: map[string]time.Time{}, timers: map[string]*time.Timer{}}
}

func (l *liveness) on() bool { return l.conns != nil }

func (l *liveness) connected(dev string) bool { return l.conns.Connected(dev) }

// started records the gateway's start.
func (l *liveness) started(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start = now
}

// disconnected records that dev's connection closed.
func (l *liveness) disconnected(dev string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost[dev] = now
}

// lostAt is when dev's last connection closed in this run (zero if none).
func (l *liveness) lostAt(dev string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost[dev]
}

// dueIn is how long until a device without a live connection is marked
// offline: grace after the start or its last disconnection.
func (l *liveness) dueIn(dev string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	since := l.start
	if t := l.lost[dev]; t.After(since) {
		since = t
	}
	return since.Add(l.grace).Sub(now)
}

// schedule makes check(dev) run after d, replacing a pending one.
func (l *liveness) schedule(dev string, d time.Duration, check func(string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return
	}
	if t, ok := l.timers[dev]; ok {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		l.mu.Lock()
		if l.timers[dev] != t {
			l.mu.Unlock()
			return
		}
		delete(l.timers, dev)
		l.mu.Unlock()
		check(dev)
	})
	l.timers[dev] = t
}

func (l *liveness) forget(dev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.lost, dev)
	if t, ok := l.timers[dev]; ok {
		t.Stop()
		delete(l.timers, dev)
	}
}

func (l *liveness) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for dev, t := range l.timers {
		t.Stop()
		delete(l.timers, dev)
	}
}

// startLiveness follows disconnections and schedules a check of every
// device recorded online, grace after now.
func (c *Controller) startLiveness(devs []*fleet.Device) {
	if !c.live.on() {
		return
	}
	c.live.started(c.cfg.Now())
	c.live.conns.NotifyDisconnect(func(username string) {
		if !c.isDeviceAccount(username) {
			return
		}
		c.live.disconnected(username, c.cfg.Now())
		c.live.schedule(username, c.live.grace, c.inbox.putCheck)
	})
	for _, d := range devs {
		if d.Online {
			c.live.schedule(d.ID, c.live.grace, c.inbox.putCheck)
		}
	}
}

// isDeviceAccount reports whether username is a device's in the auth table.
func (c *Controller) isDeviceAccount(username string) bool {
	t := c.table.p.Load()
	if t == nil {
		return false
	}
	a, ok := t.Lookup(username)
	return ok && a.Role == broker.RoleDevice
}

// checkPresence marks dev offline when it is recorded online without a
// live connection and its grace is over (inbox goroutine).
func (c *Controller) checkPresence(ctx context.Context, dev string) {
	if c.live.connected(dev) {
		return
	}
	if wait := c.live.dueIn(dev, c.cfg.Now()); wait > 0 {
		c.live.schedule(dev, wait, c.inbox.putCheck)
		return
	}
	d, err := c.store.GetDevice(ctx, dev)
	if err != nil || !d.Online {
		return
	}
	heard := d.LastSeen
	if t := c.live.lostAt(dev); t.After(heard) {
		heard = t
	}
	p := fleet.Presence{Online: false, Session: d.BirthSession, At: heard, Force: true}
	if _, err := c.store.UpdatePresence(ctx, dev, p); err != nil {
		c.log.Warn("mark device offline", "device", dev, "error", err)
		return
	}
	c.repairs.applied(dev, p)
	c.setOnline(dev, false)
	if c.live.connected(dev) {
		// It came back while this ran: its online, queued behind, is the
		// word; no offline on the topic.
		c.queue.Add(dev)
		return
	}
	c.log.Info("device marked offline: its agent holds no live connection", "device", dev,
		"last_seen", heard.UTC().Format(time.RFC3339), "grace", c.live.grace)
	if t, err := topic.Availability(dev); err == nil {
		if err := c.publishPresence(t, p); err != nil {
			c.log.Warn("publish device offline", "device", dev, "error", err)
		}
	}
	c.queue.Add(dev)
	c.changed("device/" + dev)
}

// lateWill reports whether last, the topic's last note, is an "offline"
// that does not belong on the topic of a device that holds a live
// connection and said "online" over it: a late Will of an earlier
// connection, or the controller's own offline from a check that raced the
// reconnection. Availability restates want. The device's own "offline" of
// the current session (its goodbye) is left for the inbox.
func (c *Controller) lateWill(dev string, last availNote, want fleet.Presence) bool {
	if !c.live.on() || !want.Online || last.payload != presencePayload(false) {
		return false
	}
	own := !last.republish && last.session == want.Session
	return !own && c.live.connected(dev)
}
