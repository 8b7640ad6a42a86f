package controller

import (
	"strconv"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// A device's retained availability is what Home Assistant and every other
// subscriber reads, so a late Will of an old session must not stay there
// (docs/security.md, Stale-Will protection). mochi gives a hook no way to
// drop a Will, and an external broker none at all, so the controller
// repairs the topic after the fact: it remembers the last availability
// message delivered on each device's topic (inbox.lastAvailability) and
// Reconcile re-publishes the presence of the newest session when that
// message is older than it. The re-publish carries the session of the
// presence it restates and the user property origin=gateway; the inbox
// never applies such a message as presence (it is not the device's word),
// it only compares it, so a re-publish that lost a race with a newer
// message is itself repaired.
const (
	originProperty = "origin"
	originGateway  = "gateway"
)

// availabilitySettle is how long after repairing a late Will the repair is
// published once more: mochi hands a delayed Will to subscribers before it
// retains it (server.go sendDelayedLWT), so a repair that follows the
// delivery at once can be retained before the Will and be overwritten.
const availabilitySettle = 2 * time.Second

// isRepublish reports whether m is the controller's own re-publish.
func isRepublish(m broker.Message) bool {
	for _, u := range m.User {
		if u.Key == originProperty && u.Value == originGateway {
			return true
		}
	}
	return false
}

// availRepair is what the controller remembers to repair availability.
type availRepair struct {
	mu       sync.Mutex                // guards the fields below; never held across I/O
	presence map[string]fleet.Presence // device -> the last presence the inbox applied
	settle   map[string]*time.Timer    // device -> queues it when its settle re-publish is due
	due      map[string]bool           // device -> the settle re-publish is due now
	down     bool
}

func newAvailRepair() *availRepair {
	return &availRepair{presence: map[string]fleet.Presence{}, settle: map[string]*time.Timer{}, due: map[string]bool{}}
}

// applied records a presence the store applied.
func (r *availRepair) applied(dev string, p fleet.Presence) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.presence[dev] = p
}

func (r *availRepair) presenceOf(dev string) (fleet.Presence, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.presence[dev]
	return p, ok
}

// settleAfter makes the device's repair due again after d, and calls
// queue(dev) then. Its own timer, not the work queue's AddAfter: another
// AddAfter of the device (a retry, a Home Assistant birth) would replace it.
func (r *availRepair) settleAfter(dev string, d time.Duration, queue func(string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return
	}
	if t, ok := r.settle[dev]; ok {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		r.mu.Lock()
		if r.settle[dev] != t {
			r.mu.Unlock()
			return
		}
		delete(r.settle, dev)
		r.due[dev] = true
		r.mu.Unlock()
		queue(dev)
	})
	r.settle[dev] = t
}

// takeDue reports whether the device's settle re-publish is due, clearing it.
func (r *availRepair) takeDue(dev string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	due := r.due[dev]
	delete(r.due, dev)
	return due
}

// setDue makes it due again (its publish failed; the retry takes it).
func (r *availRepair) setDue(dev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.due[dev] = true
}

func (r *availRepair) forget(dev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.presence, dev)
	delete(r.due, dev)
	if t, ok := r.settle[dev]; ok {
		t.Stop()
		delete(r.settle, dev)
	}
}

// stop cancels every pending settle timer; later ones are not started.
func (r *availRepair) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = true
	for dev, t := range r.settle {
		t.Stop()
		delete(r.settle, dev)
	}
}

// reconcileAvailability re-publishes, retained, the device's newest
// presence when the last availability message on its topic is wrong:
//
//   - of an older session than that presence (a late Will): now, and once
//     more after availabilitySettle;
//   - the controller's own re-publish of that session saying otherwise (the
//     device's own Will landed after it).
//
// A message of a newer session, or the device's own word about the current
// one, is left alone: the inbox has yet to apply it. Nothing is published
// for a topic on which no message was seen (a cleared topic stays cleared).
// The presence is the one the inbox last applied, or the store's after a
// restart; never the birth's session alone, which precedes its "online".
func (c *Controller) reconcileAvailability(d *fleet.Device) error {
	t, err := topic.Availability(d.ID)
	if err != nil {
		return nil
	}
	want, ok := c.repairs.presenceOf(d.ID)
	if !ok {
		want = fleet.Presence{Online: d.Online, Session: d.BirthSession}
	}
	settle := c.repairs.takeDue(d.ID)
	last, seen := c.inbox.lastAvailability(t)
	if !seen {
		return nil
	}
	s, ours := sessionOf(last), isRepublish(last)
	late := s < want.Session && !ours
	switch {
	case s > want.Session:
		return nil
	case s < want.Session: // a late Will, or a re-publish of an older presence
	case ours && string(last.Payload) != presencePayload(want.Online):
	case ours && settle:
	default:
		return nil
	}
	if err := c.publishPresence(t, want); err != nil {
		if settle {
			c.repairs.setDue(d.ID)
		}
		return err
	}
	c.log.Info("device availability re-published", "device", d.ID,
		"session", want.Session, "online", want.Online, "was_session", s, "was", string(last.Payload))
	if late {
		c.repairs.settleAfter(d.ID, availabilitySettle, c.queue.Add)
	}
	return nil
}

func (c *Controller) publishPresence(t string, p fleet.Presence) error {
	m := broker.Message{Topic: t, Payload: []byte(presencePayload(p.Online)), QoS: 1, Retain: true,
		User: []broker.UserProperty{{Key: "session", Value: strconv.FormatUint(p.Session, 10)}, {Key: originProperty, Value: originGateway}}}
	return c.cfg.Broker.Publish(m)
}

func presencePayload(online bool) string {
	if online {
		return "online"
	}
	return "offline"
}
