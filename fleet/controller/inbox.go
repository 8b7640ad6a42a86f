package controller

import (
	"strconv"
	"sync"

	"github.com/chorus-edge/chorus/broker"
)

// maxInboxEvents caps the queued bus events (install failures); state topics
// are coalesced by topic and need no cap.
const maxInboxEvents = 4096

// inbox hands broker messages from inline handlers (which run on the
// publisher's goroutine and must not block) to the inbox goroutine.
//
// State topics are retained and level-based, so only the newest message of
// a topic matters and the inbox keeps one per topic: memory is bounded by
// the number of devices, whatever a device publishes. For availability the
// message of the highest session wins, so a late Will coalesced after a
// birth's "online" cannot hide it (ARCHITECTURE.md §3), and the
// controller's own re-publish never hides the device's word.
//
// Separately, the last availability message delivered on each topic is kept
// whatever coalescing dropped: it is what the broker retains as far as
// delivery order tells, which Reconcile repairs (availability.go). Delivery
// order is not retain order when two publishers race on a topic, so each
// note also says which one it follows on its topic: a repair can tell
// whether anything landed between its decision and its own message.
type inbox struct {
	mu        sync.Mutex // guards the fields below
	order     []string
	latest    map[string]broker.Message
	lastAvail map[string]availNote // availability topic -> last message delivered
	availSeq  uint64               // numbers the notes, across topics
	events    []broker.Message
	checks    map[string]bool // devices whose presence to check (liveness.go)
	dropped   int
	// latestWins keeps the last device message delivered on an
	// availability topic whatever its session (presence tied to live
	// connections: a re-imaged device's session 1 follows session 9).
	latestWins bool
	wake       chan struct{}
	down       bool
}

// availNote is one availability message as delivered, reduced to what the
// repair reads of it (availability.go): one is kept per device for the
// gateway's life, and the whole message (~300 bytes with its payload and
// user properties) was 3.5 MB of a 10,000-device gateway's live heap
// (docs/benchmarks.md, issue 19). seq numbers it (unique, increasing), prev
// is the seq of the note it replaced on its topic (0: none since the topic
// was cleared or forgotten).
type availNote struct {
	payload   string // "online" and "offline" are presencePayload's constants, not copies
	session   uint64 // sessionOf the message
	republish bool   // isRepublish: the controller's own re-publish
	seq, prev uint64
}

// noteOf reduces m to its note.
func noteOf(m broker.Message, seq, prev uint64) availNote {
	var payload string
	switch string(m.Payload) {
	case presencePayload(true):
		payload = presencePayload(true)
	case presencePayload(false):
		payload = presencePayload(false)
	default:
		payload = string(m.Payload) // only logged
	}
	return availNote{payload: payload, session: sessionOf(m), republish: isRepublish(m), seq: seq, prev: prev}
}

func newInbox() *inbox {
	return &inbox{latest: map[string]broker.Message{}, lastAvail: map[string]availNote{}, wake: make(chan struct{}, 1)}
}

// putState queues a state message, replacing an older one of the same topic.
func (b *inbox) putState(m broker.Message, isAvailability bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return
	}
	if isAvailability {
		b.noteAvailabilityLocked(m)
	}
	old, pending := b.latest[m.Topic]
	older := sessionOf(m) < sessionOf(old) && !b.latestWins
	if pending && isAvailability && (older || isRepublish(m) && !isRepublish(old)) {
		return // old's processing queues the device's Reconcile, which compares lastAvail
	}
	if !pending {
		b.order = append(b.order, m.Topic)
	}
	b.latest[m.Topic] = m
	b.signal()
}

func (b *inbox) noteAvailabilityLocked(m broker.Message) {
	if len(m.Payload) == 0 { // cleared: nothing retained to repair
		delete(b.lastAvail, m.Topic)
		return
	}
	b.availSeq++
	b.lastAvail[m.Topic] = noteOf(m, b.availSeq, b.lastAvail[m.Topic].seq)
}

// lastAvailability returns the last non-empty message delivered on an
// availability topic.
func (b *inbox) lastAvailability(topic string) (availNote, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.lastAvail[topic]
	return n, ok
}

// forgetAvailability drops what was seen on a removed device's topic.
func (b *inbox) forgetAvailability(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.lastAvail, topic)
}

// putEvent queues a bus event; past the cap it is dropped (and counted).
func (b *inbox) putEvent(m broker.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return
	}
	if len(b.events) >= maxInboxEvents {
		b.dropped++
		return
	}
	b.events = append(b.events, m)
	b.signal()
}

// putCheck asks the inbox goroutine to check dev's presence.
func (b *inbox) putCheck(dev string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return
	}
	if b.checks == nil {
		b.checks = map[string]bool{}
	}
	b.checks[dev] = true
	b.signal()
}

func (b *inbox) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// take returns everything queued, state messages in arrival order of their
// topics, then events.
func (b *inbox) take() (state, events []broker.Message, checks []string, dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.order {
		state = append(state, b.latest[t])
	}
	for dev := range b.checks {
		checks = append(checks, dev)
	}
	events, dropped = b.events, b.dropped
	b.order, b.latest, b.events, b.checks, b.dropped = nil, map[string]broker.Message{}, nil, nil, 0
	return state, events, checks, dropped
}

func (b *inbox) shutDown() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = true
	close(b.wake)
}

// sessionOf returns the MQTT 5 user property "session" (0 when absent).
func sessionOf(m broker.Message) uint64 {
	for _, u := range m.User {
		if u.Key == "session" {
			n, err := strconv.ParseUint(u.Value, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return 0
}
