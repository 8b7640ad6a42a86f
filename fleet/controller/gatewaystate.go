package controller

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// fleetSummaryGap is the least time between two publishes of the fleet
// summary: a burst of reports (a fleet reconnecting) is served by one.
const fleetSummaryGap = time.Second

// fleetSummary is the payload of chorus/v1/gateway/fleet (docs/topics.md),
// the state of the gateway's Home Assistant sensors; the json names are the
// fields hadiscovery's templates read.
type fleetSummary struct {
	Devices        int `json:"devices"`
	DevicesOnline  int `json:"devices_online"`
	SkillsLoaded   int `json:"skills_loaded"`
	RolloutsActive int `json:"rollouts_active"`
}

// deviceTally is what one device adds to the summary.
type deviceTally struct {
	online bool
	loaded int
}

// gatewayState keeps the fleet summary from what the controller already
// reads: Reconcile observes each device it loads (presence and its skills
// report), the rollout engine the active rollouts of each pass. It is
// published once both have been seen (at start every device is seeded from
// the store), then whenever it changes, at most once per fleetSummaryGap.
type gatewayState struct {
	changed chan struct{} // something changed (coalesced)

	mu       sync.Mutex // guards the fields below; never held across I/O
	devices  map[string]deviceTally
	rollouts int
	seeded   bool // the devices were loaded at start
	engine   bool // the engine finished a pass
	again    bool // publish even if unchanged (start, Home Assistant's birth)
}

func newGatewayState() *gatewayState {
	return &gatewayState{changed: make(chan struct{}, 1), devices: map[string]deviceTally{}, again: true}
}

func (g *gatewayState) signal() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// observe records one device's presence and loaded skills.
func (g *gatewayState) observe(dev string, online bool, loaded int) {
	g.mu.Lock()
	old, ok := g.devices[dev]
	t := deviceTally{online: online, loaded: loaded}
	g.devices[dev] = t
	g.mu.Unlock()
	if !ok || old != t {
		g.signal()
	}
}

func (g *gatewayState) forget(dev string) {
	g.mu.Lock()
	_, ok := g.devices[dev]
	delete(g.devices, dev)
	g.mu.Unlock()
	if ok {
		g.signal()
	}
}

// seededDevices marks the start-up load of the registry done.
func (g *gatewayState) seededDevices() {
	g.mu.Lock()
	g.seeded = true
	g.mu.Unlock()
	g.signal()
}

// setRollouts records the active rollouts of an engine pass.
func (g *gatewayState) setRollouts(n int) {
	g.mu.Lock()
	changed := !g.engine || g.rollouts != n
	g.rollouts, g.engine = n, true
	g.mu.Unlock()
	if changed {
		g.signal()
	}
}

// republish asks for the gateway's config and summary again.
func (g *gatewayState) republish() {
	g.mu.Lock()
	g.again = true
	g.mu.Unlock()
	g.signal()
}

// take returns the summary, whether it may be published yet, and whether
// it is due even if unchanged (clearing that request).
func (g *gatewayState) take() (s fleetSummary, ready, again bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.seeded || !g.engine {
		return s, false, false
	}
	for _, t := range g.devices {
		s.Devices++
		if t.online {
			s.DevicesOnline++
		}
		s.SkillsLoaded += t.loaded
	}
	s.RolloutsActive = g.rollouts
	again, g.again = g.again, false
	return s, true, again
}

// runGatewayState publishes the fleet summary (retained, always) and the
// gateway's Home Assistant config (retained, at start and on Home
// Assistant's birth, unless Home Assistant is disabled).
func (c *Controller) runGatewayState() {
	var last []byte
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.gw.changed:
		}
		s, ready, again := c.gw.take()
		if !ready {
			continue
		}
		b, _ := json.Marshal(s) // a struct of ints always encodes
		if again || !bytes.Equal(b, last) {
			last = b
			if err := c.publishGateway(b, again); err != nil {
				c.log.Warn("publish the gateway's state", "error", err)
				last = nil
				c.gw.republish() // retried after the gap
			}
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(fleetSummaryGap):
		}
	}
}

func (c *Controller) publishGateway(summary []byte, config bool) error {
	if config && !c.ha.cfg.Disabled {
		t, payload, err := hadiscovery.BuildGateway(hadiscovery.GatewayInput{Prefix: c.ha.cfg.Prefix, ChorusVersion: c.ha.cfg.Version})
		if err != nil {
			return err
		}
		if err := c.cfg.Broker.Publish(broker.Message{Topic: t, Payload: payload, QoS: 1, Retain: true, ContentType: "application/json"}); err != nil {
			return err
		}
	}
	return c.cfg.Broker.Publish(broker.Message{Topic: topic.GatewayFleet, Payload: summary, QoS: 1, Retain: true, ContentType: "application/json"})
}

// loadedSkills counts the skills a report shows loaded.
func loadedSkills(r state.Skills) int {
	n := 0
	for _, s := range r.Skills {
		if s.State == stateLoaded {
			n++
		}
	}
	return n
}
