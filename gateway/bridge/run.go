package bridge

import (
	"context"
	"errors"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/envelope"
	"github.com/chorus-edge/chorus/gateway/mqttmsg"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// run is the relay goroutine: it owns routes, byHub and sats.
func (r *Relay) run() {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
			r.applyRoutes()
		case p := <-r.in:
			r.applyRoutes() // routes set before p was offered apply to p
			r.handle(p)
		case <-t.C:
			r.sweep()
		}
	}
}

// applyRoutes installs the routes SetRoutes handed over, if any, and emits
// the departures they imply.
func (r *Relay) applyRoutes() {
	if !r.dirty.Swap(false) {
		return
	}
	r.mu.Lock()
	next, departed := r.next, r.departed
	r.departed = nil
	r.mu.Unlock()
	routes := make(map[string]Route, len(next))
	byHub := map[string][]string{}
	for _, rt := range next {
		routes[rt.Satellite] = rt
		byHub[rt.Hub] = append(byHub[rt.Hub], rt.Satellite)
	}
	// Departures are decided in SetRoutes, so a route added and removed
	// before the goroutine looked still departs.
	for _, old := range departed {
		r.depart(old, routes[old.Satellite])
	}
	r.routes, r.byHub = routes, byHub
}

// depart emits ovos.skill.deregister on the hub for each skill the satellite
// hosts, with the hub-side session in the context and the skill in the data
// (BRIDGE-1 §4.3), and drops what was held for it. context.skill_id names
// the skill too, so a detach_skill twin is a safe self-deregistration.
func (r *Relay) depart(rt Route, now Route) {
	st := r.state(rt.Satellite)
	if now.Satellite == "" { // gone, not moved to another hub
		st.pending, st.limit = nil, nil
	}
	skills := st.skills.ids()
	if len(skills) == 0 {
		skills = st.cleared.ids() // cleared just before the departure reached us
	}
	st.cleared = skillIDs{}
	for _, sk := range skills {
		m := envelope.New(TypeSkillDeregister, map[string]any{KeySkillID: sk})
		m.Context = map[string]any{
			envelope.KeySource:  rt.Participant(),
			KeySkillID:          sk,
			envelope.KeySession: map[string]any{envelope.KeySessionID: HubSessionID(rt.Satellite, DefaultSession)},
		}
		r.publishWithTwin(rt.Hub, m, nil)
	}
	r.log.Info("bridge: satellite departed", "satellite", rt.Satellite, "hub", rt.Hub, "deregistered", len(skills))
}

func (r *Relay) state(dev string) *satState {
	st, ok := r.sats[dev]
	if !ok {
		st = &satState{since: r.cfg.Now()}
		r.sats[dev] = st
	}
	return st
}

func (r *Relay) handle(p bus.Packet) {
	t, err := topic.Parse(p.Topic)
	if err != nil {
		return
	}
	switch t.Kind {
	case topic.KindAvailability:
		r.onAvailability(t.Device, p)
	case topic.KindSkills:
		r.table = r.state(t.Device).readSkills(p.Payload, r.table)
	case topic.KindBus:
		r.onBus(t.Device, p)
	}
}

func (r *Relay) onAvailability(dev string, p bus.Packet) {
	st := r.state(dev)
	now := r.cfg.Now()
	offlineFor := now.Sub(st.since)
	if !st.availability(p, now) || !st.online {
		return
	}
	held := st.pending
	st.pending = nil
	for i, h := range held {
		if offlineFor > r.cfg.Grace || now.Sub(h.at) > r.cfg.Grace {
			r.discard(dev, len(held)-i, "back after the grace period")
			return
		}
		r.publishWithTwin(dev, h.msg, h.corr)
	}
}

func (r *Relay) onBus(dev string, p bus.Packet) {
	mode := r.twinMode(dev)
	rt, isSat := r.routes[dev]
	sats := r.byHub[dev]
	if mode == TwinsOff && !isSat && len(sats) == 0 {
		return
	}
	d, err := bus.ParseDelivery(p)
	if err != nil {
		r.log.Debug("bridge: malformed bus message ignored", "topic", p.Topic, "error", err)
		return
	}
	if tw, ok := Twin(mode, d.Message); ok {
		r.publish(dev, tw, p.CorrelationData)
	}
	if isSat {
		r.inbound(rt, d)
	}
	for _, sat := range sats {
		r.outbound(r.routes[sat], d)
	}
}

func (r *Relay) inbound(rt Route, d bus.Delivery) {
	out, notes, err := Inbound(rt, d.Message)
	if err != nil {
		if errors.Is(err, ErrNotAllowed) {
			r.stats.refused.Add(1)
		}
		r.log.Debug("bridge: not relayed", "error", err)
		return
	}
	st := r.state(rt.Satellite)
	if st.limit == nil {
		st.limit = newBucket(r.cfg.Rate, r.cfg.Burst, r.cfg.Now())
	}
	if !st.limit.take(r.cfg.Now()) {
		if n := r.stats.rateLimited.Add(1); logDrop(n) {
			r.log.Warn("bridge: satellite over its rate limit, message dropped", "satellite", rt.Satellite, "type", d.Message.Type, "dropped_total", n)
		}
		return
	}
	r.logNotes(rt, d.Message.Type, notes)
	r.publishWithTwin(rt.Hub, out, d.CorrelationData)
}

func (r *Relay) outbound(rt Route, d bus.Delivery) {
	st := r.state(rt.Satellite)
	out, notes, err := Outbound(rt, d.Message, OutboundOptions{HostsSkills: !st.skills.empty(), BySession: r.cfg.BySession})
	switch {
	case errors.Is(err, ErrPollFiltered):
		r.stats.refused.Add(1)
		r.log.Debug("bridge: not relayed", "error", err)
		return
	case err != nil:
		return // not for this satellite: the common case
	}
	r.logNotes(rt, d.Message.Type, notes)
	now := r.cfg.Now()
	switch {
	case st.online:
		r.publishWithTwin(rt.Satellite, out, d.CorrelationData)
	case st.expired(now, r.cfg.Grace):
		r.discard(rt.Satellite, 1, "offline past the grace period")
	default:
		if n := st.hold(pending{msg: out, corr: d.CorrelationData, at: now}, r.cfg.Hold); n > 0 {
			r.discard(rt.Satellite, n, "held queue full")
		}
	}
}

// sweep discards what is held for satellites offline past the grace period.
func (r *Relay) sweep() {
	now := r.cfg.Now()
	for dev, st := range r.sats {
		if len(st.pending) > 0 && st.expired(now, r.cfg.Grace) {
			r.discard(dev, len(st.pending), "offline past the grace period")
			st.pending = nil
		}
	}
}

func (r *Relay) discard(sat string, n int, why string) {
	r.stats.discarded.Add(uint64(n))
	r.log.Info("bridge: messages for satellite discarded", "satellite", sat, "count", n, "reason", why)
}

func (r *Relay) logNotes(rt Route, msgType string, notes []Note) {
	for _, n := range notes {
		r.log.Warn("bridge: message corrected", "satellite", rt.Satellite, "hub", rt.Hub, "type", msgType, "field", n.Field, "note", n.What)
	}
}

func (r *Relay) twinMode(dev string) TwinMode {
	if m, ok := r.cfg.TwinsByDevice[dev]; ok {
		return m
	}
	return r.cfg.Twins
}

// publishWithTwin publishes m on dev's bus, then its twin under dev's mode.
func (r *Relay) publishWithTwin(dev string, m envelope.Message, corr []byte) {
	if !r.publish(dev, m, corr) {
		return
	}
	r.stats.relayed.Add(1)
	if tw, ok := Twin(r.twinMode(dev), m); ok {
		r.publish(dev, tw, corr)
	}
}

// publish puts m on dev's bus as the bus client would (BUS.md §2), marked
// as the relay's own so the relay ignores it when it comes back.
func (r *Relay) publish(dev string, m envelope.Message, corr []byte) bool {
	name, err := topic.Bus(dev, m.Type)
	if err == nil {
		var payload []byte
		if payload, err = envelope.Encode(m); err == nil {
			err = r.cfg.Transport.Publish(context.Background(), bus.Packet{
				Topic: name, Payload: payload, QoS: 1, ContentType: bus.ContentType,
				MessageExpiry: r.expiry, CorrelationData: corr,
				User: mqttmsg.UserProperties{{Key: relayMarkerKey, Value: relayMarkerValue}},
			})
		}
	}
	if err != nil {
		r.log.Warn("bridge: publish", "device", dev, "type", m.Type, "error", err)
		return false
	}
	if _, twin := m.Context[KeyTwin]; twin {
		r.stats.twins.Add(1)
	}
	return true
}
