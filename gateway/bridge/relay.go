package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-edge/chorus/gateway/bus"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// Defaults of Config.
const (
	DefaultGrace     = 30 * time.Second
	DefaultHold      = 64
	DefaultInbox     = 1024
	DefaultRate      = 10.0
	DefaultBurst     = 20
	DefaultTick      = time.Second
	relayMarkerKey   = "chorus-relay"
	relayMarkerValue = "1"
)

// Config configures a Relay. Transport is required; every other zero field
// takes a default.
type Config struct {
	// Transport reaches the device buses. Inline publishes bypass the
	// broker's ACL, so the relay is the policy (STYLE.md §8).
	Transport bus.Transport
	Logger    *slog.Logger
	Now       func() time.Time

	// Grace is how long a satellite may be offline before what is meant for
	// it is discarded (BRIDGE-1 §5). It is also the MQTT 5 message expiry of
	// what the relay publishes.
	Grace time.Duration
	// Hold bounds the outbound messages held per offline satellite (oldest
	// dropped first): never unbounded buffering.
	Hold int
	// Inbox bounds the deliveries waiting for the relay goroutine; a full
	// inbox drops (counted).
	Inbox int
	// Rate and Burst limit what one satellite may send its hub (messages a
	// second, token bucket).
	Rate  float64
	Burst int
	// Tick is how often held messages of satellites offline past Grace are
	// discarded.
	Tick time.Duration
	// BySession also relays hub messages whose session is the satellite's
	// without naming it in destination (OutboundOptions.BySession).
	BySession bool

	// Twins is the topic-twin mode of every device bus; TwinsByDevice
	// overrides it per device (BUS.md §5).
	Twins         TwinMode
	TwinsByDevice map[string]TwinMode
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Grace <= 0 {
		c.Grace = DefaultGrace
	}
	if c.Hold <= 0 {
		c.Hold = DefaultHold
	}
	if c.Inbox <= 0 {
		c.Inbox = DefaultInbox
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Burst <= 0 {
		c.Burst = DefaultBurst
	}
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
	if c.Twins == "" {
		c.Twins = TwinsOff
	}
}

// Relay applies the routes and the twin modes to the device buses. Broker
// deliveries are only copied into a bounded inbox; one goroutine owns all
// state and does all publishing, so what crosses keeps its order per source
// (BRIDGE-1 §5 FIFO) and the broker's packet path never waits on the relay.
type Relay struct {
	cfg     Config
	log     *slog.Logger
	in      chan bus.Packet
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	started atomic.Bool
	unsubs  []func()
	stats   stats

	// mu guards next: the routes SetRoutes handed over and the goroutine
	// has not applied yet.
	mu       sync.Mutex
	next     []Route
	set      map[string]Route // the routes of the last SetRoutes, by satellite
	departed []Route          // routes SetRoutes ended, not yet departed
	dirty    atomic.Bool
	// interest is the set of devices whose bus the relay reads (routed
	// devices and devices with twins on); nil when every bus is read
	// because twins are on for all. offer reads it without the goroutine.
	interest atomic.Pointer[map[string]bool]

	// Owned by the relay goroutine.
	routes map[string]Route     // satellite -> route
	byHub  map[string][]string  // hub -> satellites
	sats   map[string]*satState // satellite -> state
	expiry uint32
	// table is the memory skills reports are parsed into, one after the
	// other (satState.readSkills): a new table per report was 15 MB of a
	// 10,000-device install's allocations (issue 19 round seven).
	table []state.Skill
}

// New checks cfg and returns a relay that does nothing until Start.
func New(cfg Config) (*Relay, error) {
	if cfg.Transport == nil {
		return nil, errors.New("bridge relay: no transport")
	}
	if _, err := ParseTwinMode(string(cfg.Twins)); err != nil {
		return nil, fmt.Errorf("bridge relay: %w", err)
	}
	for dev, m := range cfg.TwinsByDevice {
		if _, err := ParseTwinMode(string(m)); err != nil {
			return nil, fmt.Errorf("bridge relay: device %s: %w", dev, err)
		}
	}
	cfg.setDefaults()
	r := &Relay{
		cfg: cfg, log: cfg.Logger,
		in: make(chan bus.Packet, cfg.Inbox), kick: make(chan struct{}, 1), stop: make(chan struct{}),
		routes: map[string]Route{}, byHub: map[string][]string{}, sats: map[string]*satState{},
		expiry: uint32(min(math.Ceil(cfg.Grace.Seconds()), math.MaxUint32)),
	}
	r.setInterest(nil)
	return r, nil
}

// Start subscribes to every device's bus, availability and skills topics and
// starts the relay goroutine. Routes may be set before or after.
func (r *Relay) Start(ctx context.Context) error {
	if !r.started.CompareAndSwap(false, true) {
		return errors.New("bridge relay: already started")
	}
	for _, f := range []string{topic.AllAvailability, topic.AllSkills, topic.AllBus} {
		u, err := r.cfg.Transport.Subscribe(ctx, f, r.offer)
		if err != nil {
			r.Close()
			return fmt.Errorf("start bridge relay: %w", err)
		}
		r.unsubs = append(r.unsubs, u)
	}
	r.wg.Add(1)
	go r.run()
	return nil
}

// offer copies a delivery into the inbox without ever blocking the caller
// (the broker's packet goroutine for inline deliveries): a full inbox drops.
// What the relay published itself is ignored here, which is what keeps
// relays and twins from looping.
func (r *Relay) offer(p bus.Packet) {
	if p.User.Get(relayMarkerKey) == relayMarkerValue || !r.wants(p.Topic) {
		return
	}
	select {
	case r.in <- p:
	default:
		if n := r.stats.inboxFull.Add(1); logDrop(n) {
			r.log.Warn("bridge relay: inbox full, delivery dropped", "topic", p.Topic, "dropped_total", n)
		}
	}
}

// SetRoutes replaces the routes. It returns at once; the relay goroutine
// applies them before the next delivery it handles, so a message offered
// after SetRoutes returns is judged by the new routes (BRIDGE-1 §4.1: policy
// re-applied on every message). A satellite whose route is gone, or moved
// to another hub, has departed: ovos.skill.deregister is emitted on its old
// hub for each of its skills (BRIDGE-1 §4.3).
func (r *Relay) SetRoutes(routes []Route) {
	r.setInterest(routes)
	set := make(map[string]Route, len(routes))
	for _, rt := range routes {
		set[rt.Satellite] = rt
	}
	r.mu.Lock()
	for sat, old := range r.set {
		if nw, ok := set[sat]; !ok || nw.Hub != old.Hub {
			r.departed = append(r.departed, old)
		}
	}
	r.set = set
	r.next = append([]Route(nil), routes...)
	r.dirty.Store(true)
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Relay) setInterest(routes []Route) {
	if r.cfg.Twins != TwinsOff {
		r.interest.Store(nil)
		return
	}
	in := map[string]bool{}
	for dev, m := range r.cfg.TwinsByDevice {
		if m != TwinsOff {
			in[dev] = true
		}
	}
	for _, rt := range routes {
		in[rt.Satellite], in[rt.Hub] = true, true
	}
	r.interest.Store(&in)
}

// wants reports whether a delivery on name is worth the inbox: every
// availability and skills message, and bus messages of interesting devices.
func (r *Relay) wants(name string) bool {
	in := r.interest.Load()
	if in == nil {
		return true
	}
	t, err := topic.Parse(name)
	return err == nil && (t.Kind != topic.KindBus || (*in)[t.Device])
}

// Close unsubscribes and waits for the relay goroutine. Held messages are
// discarded. It is idempotent.
func (r *Relay) Close() error {
	r.once.Do(func() {
		for _, u := range r.unsubs {
			u()
		}
		close(r.stop)
		r.wg.Wait()
	})
	return nil
}

// Stats counts what did not cross.
type Stats struct {
	Relayed, Twins                    uint64
	InboxFull, RateLimited, Discarded uint64 // Discarded: offline past grace, or held queue full
	Refused                           uint64 // not allowed, poll-filtered, malformed
}

type stats struct {
	relayed, twins, inboxFull, rateLimited, discarded, refused atomic.Uint64
}

// Stats returns the relay's counters.
func (r *Relay) Stats() Stats {
	s := &r.stats
	return Stats{Relayed: s.relayed.Load(), Twins: s.twins.Load(), InboxFull: s.inboxFull.Load(),
		RateLimited: s.rateLimited.Load(), Discarded: s.discarded.Load(), Refused: s.refused.Load()}
}

// logDrop limits logging under a flood to the 1st, 2nd, 4th, 8th… event.
func logDrop(n uint64) bool { return n&(n-1) == 0 }
