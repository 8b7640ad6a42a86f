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

// availabilitySettle is how long after every re-publish the controller
// checks the topic again. All it observes is delivery order, which is not
// always retain order:
//
//   - mochi hands a delayed Will to subscribers before it retains it
//     (server.go sendDelayedLWT), so a repair that follows the delivery at
//     once can be retained before the Will and be overwritten;
//   - any other publish mochi retains, then delivers, and two publishers of
//     a topic are not serialised, so a device's message can be retained
//     before a re-publish and delivered after it.
//
// By the re-check such a race has played out, and the re-check publishes
// again unless the delivery order proves the re-publish is what the broker
// retains (recheck.settled). The broker offers no retained lookup to ask.
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

// says reports whether n states presence p (payload and session).
func (n availNote) says(p fleet.Presence) bool {
	return n.payload == presencePayload(p.Online) && n.session == p.Session
}

// availRepair is what the controller remembers to repair availability.
type availRepair struct {
	mu       sync.Mutex                // guards the fields below; never held across I/O
	interval time.Duration             // availabilitySettle (tests shorten it)
	presence map[string]fleet.Presence // device -> the last presence the inbox applied
	checks   map[string]recheck        // device -> its last re-publish, until re-checked
	settle   map[string]*time.Timer    // device -> queues it when its re-check is due
	due      map[string]bool           // device -> its re-check is due now
	down     bool
}

// recheck is a re-publish waiting for its settle re-check.
type recheck struct {
	sent  fleet.Presence // what it restated
	after uint64         // the seq of the note it was decided on (availNote)
	// unsure: that note was a device's message saying otherwise, which may
	// be retained after the re-publish (a delayed Will).
	unsure bool
}

// settled reports whether last, the topic's last note, proves that the
// re-publish is what the broker retains: last is the re-publish itself,
// delivered right after the message it was decided on, and that message
// could not overwrite it. Nothing delivered later can have been retained
// earlier, since nothing was delivered later.
func (r recheck) settled(last availNote) bool {
	return !r.unsure && last.prev == r.after && last.republish && last.says(r.sent)
}

func newAvailRepair() *availRepair {
	return &availRepair{interval: availabilitySettle, presence: map[string]fleet.Presence{},
		checks: map[string]recheck{}, settle: map[string]*time.Timer{}, due: map[string]bool{}}
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

func (r *availRepair) setInterval(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interval = d
}

// republished records a re-publish and makes its re-check due after the
// settle interval, calling queue(dev) then. Its own timer, not the work
// queue's AddAfter: another AddAfter of the device (a retry, a Home
// Assistant birth) would replace it.
func (r *availRepair) republished(dev string, rc recheck, queue func(string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return
	}
	r.checks[dev] = rc
	delete(r.due, dev)
	if t, ok := r.settle[dev]; ok {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(r.interval, func() {
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

// takeDue returns the device's re-check if it is due, clearing it.
func (r *availRepair) takeDue(dev string) (recheck, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.due[dev] {
		return recheck{}, false
	}
	rc := r.checks[dev]
	delete(r.due, dev)
	delete(r.checks, dev)
	return rc, true
}

// keepDue makes a re-check due again: its publish failed (the retry takes
// it), or it waits for the inbox to apply a message (the pass that follows
// takes it).
func (r *availRepair) keepDue(dev string, rc recheck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checks[dev] = rc
	r.due[dev] = true
}

func (r *availRepair) forget(dev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.presence, dev)
	delete(r.checks, dev)
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

// availAction is what reconcileAvailability does about a device's topic.
type availAction int

const (
	availLeave   availAction = iota // the topic holds the wanted presence, as far as can be told
	availWait                       // a device message the inbox has yet to apply: the pass that follows decides
	availRestate                    // re-publish the wanted presence
)

// availabilityAction judges last, the topic's last note, against want, the
// presence of the newest session applied; rc is the re-check that is due,
// if any. It restates when last is:
//
//   - of an older session than want (a late Will, or a re-publish of an
//     older presence);
//   - the controller's own re-publish of want's session saying otherwise
//     (the device's own word landed before it);
//   - at a re-check, anything the delivery order does not prove is retained.
//
// A message of a newer session, or the device's own word about the current
// one, is left for the inbox to apply. A re-check restates only when
// something else was delivered around the re-publish, so it ends once the
// topic is quiet: its own re-publish, decided on a message agreeing with it
// or on its own, settles the next one.
func availabilityAction(last availNote, want fleet.Presence, rc *recheck) availAction {
	s := last.session
	agrees := last.payload == presencePayload(want.Online)
	switch {
	case s < want.Session:
		return availRestate
	case s > want.Session:
		return availWait
	case !agrees && last.republish:
		return availRestate
	case !agrees:
		return availWait
	case rc != nil && !rc.settled(last):
		return availRestate
	}
	return availLeave
}

// reconcileAvailability re-publishes, retained, the device's newest
// presence when the last availability message on its topic is wrong
// (availabilityAction), and checks the topic again availabilitySettle after
// every re-publish. Nothing is published for a topic on which no message
// was seen (a cleared topic stays cleared).
//
// The presence is the one the inbox last applied in this run, the device's
// own word. Without one (after a restart, until the device's availability
// arrives) nothing is restated: the store's online flag may belong to an
// older session than its birth session (a birth does not change it), and
// pairing them could claim "online" for a session that never said so.
func (c *Controller) reconcileAvailability(d *fleet.Device) error {
	t, err := topic.Availability(d.ID)
	if err != nil {
		return nil
	}
	rc, due := c.repairs.takeDue(d.ID)
	want, ok := c.repairs.presenceOf(d.ID)
	last, seen := c.inbox.lastAvailability(t)
	if !ok || !seen {
		return nil
	}
	var check *recheck
	if due {
		check = &rc
	}
	action := availabilityAction(last, want, check)
	if action == availWait && c.lateWill(d.ID, last, want) {
		action = availRestate
	}
	switch action {
	case availLeave:
		return nil
	case availWait:
		if due {
			c.repairs.keepDue(d.ID, rc)
		}
		return nil
	}
	if err := c.publishPresence(t, want); err != nil {
		if due {
			c.repairs.keepDue(d.ID, rc)
		}
		return err
	}
	c.log.Info("device availability re-published", "device", d.ID, "session", want.Session, "online", want.Online,
		"was_session", last.session, "was", last.payload, "recheck", due)
	unsure := !last.republish && !last.says(want)
	c.repairs.republished(d.ID, recheck{sent: want, after: last.seq, unsure: unsure}, c.queue.Add)
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
