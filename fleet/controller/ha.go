package controller

import (
	"crypto/sha256"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// HomeAssistant configures Home Assistant MQTT discovery (ARCHITECTURE.md §3,
// fleet/hadiscovery). The zero value publishes, on the default prefix.
type HomeAssistant struct {
	Disabled bool   // publish no discovery configs and no update states
	Prefix   string // discovery prefix ("homeassistant")
	Version  string // Chorus's version, shown as the origin's sw_version

	// MaxJitter bounds the random delay before a device's config is
	// published again after Home Assistant's birth (5s), so a fleet does not
	// answer all at once. Jitter, when set, picks the delay instead (tests
	// return 0).
	MaxJitter time.Duration
	Jitter    func() time.Duration
}

func (h *HomeAssistant) setDefaults() {
	if h.Prefix == "" {
		h.Prefix = topic.DefaultHAPrefix
	}
	if h.MaxJitter <= 0 {
		h.MaxJitter = 5 * time.Second
	}
	if h.Jitter == nil {
		maxJitter := h.MaxJitter
		h.Jitter = func() time.Duration { return rand.N(maxJitter) }
	}
}

// haInstallQueue caps the update/set commands waiting for the install goroutine.
const haInstallQueue = 256

// haPublisher is what the controller remembers of its Home Assistant
// publishing. Reconcile is the only writer of a device's entry (the work
// queue never hands one device to two workers); births and removals only
// bump the generation or delete the entry.
type haPublisher struct {
	cfg      HomeAssistant
	births   chan struct{}       // Home Assistant announced itself (coalesced)
	installs chan broker.Message // update/set commands for the install goroutine

	mu      sync.Mutex // guards the fields below; never held across I/O
	gen     uint64     // bumped by every Home Assistant birth
	devices map[string]haDevice
}

// haDevice is what was last published for one device.
type haDevice struct {
	config  [sha256.Size]byte // haInputKey of the input the config was built from (30 MB less than the configs at 10k devices)
	sent    bool              // a config was published
	comps   packedMap         // its live components (hadiscovery.Components), key -> platform
	updates packedMap         // skill -> update state payload
	gen     uint64            // the birth generation it was published for
}

func newHAPublisher(cfg HomeAssistant) *haPublisher {
	cfg.setDefaults()
	return &haPublisher{
		cfg: cfg, births: make(chan struct{}, 1), installs: make(chan broker.Message, haInstallQueue),
		devices: map[string]haDevice{},
	}
}

func (h *haPublisher) snapshot(id string) (haDevice, uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.devices[id], h.gen
}

func (h *haPublisher) store(id string, d haDevice) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.devices[id] = d
}

// take forgets a device and returns what was published for it.
func (h *haPublisher) take(id string) haDevice {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.devices[id]
	delete(h.devices, id)
	return d
}

// has reports whether something is remembered as published for a device.
func (h *haPublisher) has(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.devices[id]
	return ok
}

func (h *haPublisher) born() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
}

// startHA subscribes to Home Assistant's birth and to the update/set
// commands and starts their goroutines. The broker handlers only enqueue.
func (c *Controller) startHA() error {
	if c.ha.cfg.Disabled {
		return nil
	}
	status, err := topic.HAStatus(c.ha.cfg.Prefix)
	if err != nil {
		return err
	}
	u, err := c.cfg.Broker.Subscribe(status, func(m broker.Message) {
		if string(m.Payload) != "online" {
			return
		}
		select {
		case c.ha.births <- struct{}{}:
		default: // one pending birth covers this one
		}
	})
	if err != nil {
		return err
	}
	c.unsubs = append(c.unsubs, u)
	u, err = c.cfg.Broker.Subscribe(topic.AllSkillUpdateSet, func(m broker.Message) {
		select {
		case c.ha.installs <- m:
		default:
			c.log.Warn("update/set queue full: command dropped", "topic", m.Topic)
		}
	})
	if err != nil {
		return err
	}
	c.unsubs = append(c.unsubs, u)
	c.goRun(c.runHABirths)
	c.goRun(c.runHAInstalls)
	return nil
}

// runHABirths answers Home Assistant's birth: every device's config and
// update states are published again (fleet-anchors §3: configs stay
// retained and are re-published on birth), each after its own jitter.
func (c *Controller) runHABirths() {
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.ha.births:
		}
		c.ha.born()
		c.gw.republish() // the gateway's own config and fleet summary
		ids, err := c.store.ListDeviceIDs(c.ctx, fleet.DeviceFilter{})
		if err != nil {
			c.log.Warn("Home Assistant birth: list devices", "error", err)
			continue
		}
		c.log.Info("Home Assistant online: publishing discovery again", "devices", len(ids))
		for _, id := range ids {
			c.queue.AddAfter(id, c.ha.cfg.Jitter())
		}
	}
}
