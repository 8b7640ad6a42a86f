package agent

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/device/skillmanager"
	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// reporter publishes the agent's retained state. One goroutine owns the
// publishing: update and connected only record what to send and wake it, so
// the manager's notifier and the transport's connection callback never wait
// on the network. A snapshot is published only when its payload changed,
// and everything is published again after each (re)connection.
type reporter struct {
	a *Agent

	mu      sync.Mutex
	latest  *skillmanager.Snapshot
	tr      bus.Transport     // the connection, once up
	resend  bool              // a new connection: publish everything again
	rebirth bool              // the birth changed (the drop-in's address is now known)
	sent    map[string][]byte // topic -> last payload published
	version int64             // the installer's applied desired version
	managed map[string]bool   // skills the installer manages

	wake chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func newReporter(a *Agent) *reporter {
	r := &reporter{a: a, sent: map[string][]byte{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	r.wg.Add(1)
	go r.run()
	return r
}

// update records the manager's latest snapshot.
func (r *reporter) update(s skillmanager.Snapshot) {
	r.mu.Lock()
	r.latest = &s
	r.mu.Unlock()
	r.poke()
}

// connected is the transport's OnConnect: publish availability and birth at
// once (so they precede anything else of this session), then the rest.
func (r *reporter) connected(ctx context.Context) {
	tr := bus.MQTTFromContext(ctx)
	r.publish(ctx, tr, r.birthPackets()...)
	r.mu.Lock()
	r.tr, r.resend = tr, true
	r.mu.Unlock()
	r.poke()
}

// applied records the installer's applied version and managed skills.
func (r *reporter) applied(version int64, managed []string) {
	m := make(map[string]bool, len(managed))
	for _, id := range managed {
		m[id] = true
	}
	r.mu.Lock()
	r.version, r.managed = version, m
	r.mu.Unlock()
	r.poke()
}

// birthChanged re-publishes the birth, once the services it names run.
func (r *reporter) birthChanged() {
	r.mu.Lock()
	r.rebirth = true
	r.mu.Unlock()
	r.poke()
}

func (r *reporter) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *reporter) run() {
	defer r.wg.Done()
	for {
		select {
		case <-r.done:
			r.flush()
			return
		case <-r.wake:
			r.flush()
		}
	}
}

// flush publishes what changed since the last flush.
func (r *reporter) flush() {
	r.mu.Lock()
	snap, tr, resend, rebirth := r.latest, r.tr, r.resend, r.rebirth
	r.resend, r.rebirth = false, false
	if resend {
		r.sent = map[string][]byte{}
	}
	r.mu.Unlock()
	if tr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if rebirth {
		r.publish(ctx, tr, r.birthPackets()...)
	}
	if snap == nil {
		return
	}
	var out []bus.Packet
	r.mu.Lock()
	for _, p := range r.statePackets(r.withInstallerLocked(*snap)) {
		if prev, ok := r.sent[p.Topic]; !ok || !bytes.Equal(prev, p.Payload) {
			out = append(out, p)
		}
	}
	r.mu.Unlock()
	r.publish(ctx, tr, out...)
}

func (r *reporter) publish(ctx context.Context, tr bus.Transport, ps ...bus.Packet) {
	for _, p := range ps {
		if err := tr.Publish(ctx, p); err != nil {
			r.a.log.Warn("publish state", "topic", p.Topic, "error", err)
			continue
		}
		r.mu.Lock()
		r.sent[p.Topic] = p.Payload
		r.mu.Unlock()
	}
}

func (r *reporter) birthPackets() []bus.Packet {
	a := r.a
	avail, _ := topic.Availability(a.cfg.Device)
	birthTopic, _ := topic.Birth(a.cfg.Device)
	birth, err := state.Encode(newBirth(a.session.Load(), a.cfg.Version, a.started, a.WSAddr(), a.iso.Mode))
	if err != nil { // a hostname or version over 4 KiB: say so, send availability
		a.log.Error("birth not published", "err", err)
		return []bus.Packet{*a.availability(avail, "online")}
	}
	return []bus.Packet{
		{Topic: birthTopic, Payload: birth, QoS: 1, Retain: true, ContentType: "application/json"},
		*a.availability(avail, "online"),
	}
}

// withInstallerLocked adds what the installer knows to the manager's
// snapshot: the applied desired version and which skills are fleet-managed.
func (r *reporter) withInstallerLocked(s skillmanager.Snapshot) skillmanager.Snapshot {
	s.Skills.AppliedVersion = r.version
	skills := make([]skillmanager.SkillReport, len(s.Skills.Skills))
	for i, sk := range s.Skills.Skills {
		sk.Managed = r.managed[sk.ID]
		skills[i] = sk
	}
	s.Skills.Skills = skills
	return s
}

func (r *reporter) statePackets(s skillmanager.Snapshot) []bus.Packet {
	dev := r.a.cfg.Device
	connTopic, _ := topic.Connectivity(dev)
	skillsTopic, _ := topic.Skills(dev)
	var out []bus.Packet
	// An empty payload would clear the retained topic: a payload that cannot
	// be sent is left out, and the topic keeps the last one the broker took.
	if conn, err := state.Encode(s.Connectivity); err != nil {
		r.a.log.Error("connectivity not published", "err", err)
	} else {
		out = append(out, bus.Packet{Topic: connTopic, Payload: conn, QoS: 1, Retain: true, ContentType: "application/json"})
	}
	if skills, err := state.Encode(s.Skills); err != nil {
		r.a.log.Error("skills report not published", "err", err)
	} else {
		out = append(out, bus.Packet{Topic: skillsTopic, Payload: skills, QoS: 1, Retain: true, ContentType: "application/json"})
	}
	return out
}

// stop publishes the last state and waits for the goroutine; idempotent.
func (r *reporter) stop() {
	r.once.Do(func() {
		close(r.done)
		r.wg.Wait()
	})
}
