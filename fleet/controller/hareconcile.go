package controller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/hadiscovery"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// updateState is the update entity's state (ARCHITECTURE.md §3 skill/<skill>/update),
// the JSON Home Assistant's MQTT update platform reads.
type updateState struct {
	InstalledVersion string `json:"installed_version"`
	LatestVersion    string `json:"latest_version"`
	Title            string `json:"title"`
}

// reconcileHA brings the device's Home Assistant topics in line with its
// registry entry, by level like the rest of Reconcile: the discovery config
// is published (retained) when its content changes (the component set, the
// titles, the agent version), not on every skills report; the update state
// of each fleet-managed skill when it changes; both again after a Home
// Assistant birth. Components and update topics of skills that went away are
// withdrawn. rep is d's skills report, parsed; removals is c.removals as
// read before d was.
func (c *Controller) reconcileHA(ctx context.Context, d *fleet.Device, rep state.Skills, removals uint64) error {
	if c.ha.cfg.Disabled {
		return nil
	}
	in, updates, err := c.haInput(ctx, d, rep)
	if err != nil {
		return fmt.Errorf("home assistant: %w", err)
	}
	last, gen := c.ha.snapshot(d.ID)
	again := last.gen != gen || !last.sent
	// The config is a pure function of in (hadiscovery.Build), so the key
	// of in stands for its content: a skills report that changes nothing
	// Home Assistant shows builds nothing (Build and Components were 8-11 %
	// of the gateway's CPU in a 1,000-device install, docs/benchmarks.md).
	sum, comps := haInputKey(in), last.comps
	if again || sum != last.config {
		live, err := c.publishHAConfig(in, last.comps.strings())
		if err != nil {
			return err
		}
		comps = packMap(live)
	}
	// Equal packed values are equal maps, which publish nothing unless again.
	packed := packMap(updates)
	if again || packed != last.updates {
		if err := c.publishHAUpdates(d.ID, last.updates.bytes(), updates, again); err != nil {
			return err
		}
	}
	c.ha.store(d.ID, haDevice{config: sum, sent: true, comps: comps, updates: packed, gen: gen})
	// A removal between our GetDevice and now cleared the topics before we
	// published them: clear them again (RemoveDevice deletes, counts, then
	// clears). While the count is unchanged no removal has reached its
	// clearing yet, and one that does later clears what we published: the
	// device is read again only when some removal happened meanwhile (the
	// second read was 5 % of a 1,000-device install, docs/benchmarks.md).
	if c.removals.Load() == removals {
		return nil
	}
	if _, err := c.store.GetDevice(ctx, d.ID); fleet.ErrorCode(err) == fleet.ENOTFOUND {
		c.removeHA(d.ID)
	}
	return nil
}

// publishHAConfig publishes in's config retained, withdrawing the
// components of the previous config (prev) that are gone, and returns the
// new config's live components.
func (c *Controller) publishHAConfig(in hadiscovery.Input, prev map[string]string) (map[string]string, error) {
	t, payload, live, err := hadiscovery.Replace(in, prev)
	if err != nil {
		return nil, fmt.Errorf("home assistant: %w", err)
	}
	if err := c.cfg.Broker.Publish(broker.Message{Topic: t, Payload: payload, QoS: 1, Retain: true, ContentType: "application/json"}); err != nil {
		return nil, fmt.Errorf("home assistant: publish %s: %w", t, err)
	}
	withdrawn := 0
	for k := range prev {
		if _, ok := live[k]; !ok {
			withdrawn++
		}
	}
	c.log.Debug("Home Assistant discovery published", "device", in.Device, "components", len(live), "withdrawn", withdrawn)
	return live, nil
}

// publishHAUpdates publishes the changed update states and clears those of
// skills no longer fleet-managed on the device.
func (c *Controller) publishHAUpdates(dev string, prev, cur map[string][]byte, again bool) error {
	for skill, p := range cur {
		if !again && bytes.Equal(p, prev[skill]) {
			continue
		}
		if err := c.publishUpdateState(dev, skill, p); err != nil {
			return err
		}
	}
	for skill := range prev {
		if _, ok := cur[skill]; !ok {
			if err := c.publishUpdateState(dev, skill, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishUpdateState publishes one update state retained; nil clears it.
func (c *Controller) publishUpdateState(dev, skill string, payload []byte) error {
	t, err := topic.SkillUpdate(dev, skill)
	if err != nil {
		return err
	}
	m := broker.Message{Topic: t, Payload: payload, QoS: 1, Retain: true}
	if payload != nil {
		m.ContentType = "application/json"
	}
	if err := c.cfg.Broker.Publish(m); err != nil {
		return fmt.Errorf("home assistant: publish %s: %w", t, err)
	}
	return nil
}

// haInput reads the device's skills report into the discovery input and
// the update state of each fleet-managed skill (latest = the catalog's most
// recently published version). Skills whose id cannot be a topic level
// (reported invalid by the agent) get no entities.
func (c *Controller) haInput(ctx context.Context, d *fleet.Device, rep state.Skills) (hadiscovery.Input, map[string][]byte, error) {
	in := hadiscovery.Input{Prefix: c.ha.cfg.Prefix, Device: d.ID, AgentVersion: d.AgentVersion, ChorusVersion: c.ha.cfg.Version}
	updates := map[string][]byte{}
	in.Skills = make([]hadiscovery.Skill, 0, len(rep.Skills)) // one table, not one per doubling
	var seen map[string]bool                                  // made only for a long table (listed)
	for _, s := range rep.Skills {
		if topic.ValidSkillID(s.ID) != nil || listed(in.Skills, &seen, s.ID) {
			continue
		}
		sk := hadiscovery.Skill{ID: s.ID, Title: s.ID, Managed: s.Managed}
		if s.Managed {
			st, err := c.updateState(ctx, s)
			if err != nil {
				return in, nil, err
			}
			sk.Title = st.Title
			if updates[s.ID], err = json.Marshal(st); err != nil {
				return in, nil, err
			}
		}
		in.Skills = append(in.Skills, sk)
	}
	return in, updates, nil
}

// maxScannedSkills is the length of a table up to which listed scans it;
// past it, a map of the ids answers.
const maxScannedSkills = 16

// listed reports whether id is in skills, and records it as listed from
// now on. A short table (every real report) is scanned, which allocates
// nothing; a longer one gets the map seen, so a report of thousands of
// skills is not scanned quadratically.
func listed(skills []hadiscovery.Skill, seen *map[string]bool, id string) bool {
	if len(skills) < maxScannedSkills {
		for _, s := range skills {
			if s.ID == id {
				return true
			}
		}
		return false
	}
	if *seen == nil {
		*seen = make(map[string]bool, 2*len(skills))
		for _, s := range skills {
			(*seen)[s.ID] = true
		}
	}
	if (*seen)[id] {
		return true
	}
	(*seen)[id] = true
	return false
}

func (c *Controller) updateState(ctx context.Context, s state.Skill) (updateState, error) {
	st := updateState{InstalledVersion: s.Version, LatestVersion: s.Version, Title: s.ID}
	v, err := c.store.LatestVersion(ctx, s.ID)
	switch {
	case fleet.ErrorCode(err) == fleet.ENOTFOUND: // installed from a catalog entry since removed
		return st, nil
	case err != nil:
		return st, fmt.Errorf("latest version of %s: %w", s.ID, err)
	}
	st.LatestVersion = v.Version
	if v.Title != "" {
		st.Title = v.Title
	}
	return st, nil
}

// removeHA clears the device's discovery config (an empty retained payload
// removes the device and its entities from Home Assistant) and the update
// states published for it, and forgets them.
func (c *Controller) removeHA(id string) {
	if c.ha.cfg.Disabled {
		return
	}
	last := c.ha.take(id)
	if t, payload := hadiscovery.Remove(c.ha.cfg.Prefix, id); t != "" {
		if err := c.cfg.Broker.Publish(broker.Message{Topic: t, Payload: payload, QoS: 1, Retain: true}); err != nil {
			c.log.Warn("clear Home Assistant config", "topic", t, "error", err)
		}
	}
	last.updates.each(func(skill, _ string) { // in key order
		if err := c.publishUpdateState(id, skill, nil); err != nil {
			c.log.Warn("clear update state", "device", id, "skill", skill, "error", err)
		}
	})
}

// haCatalogChanged reconciles every device after a publish: their update
// entities show the new latest version.
func (c *Controller) haCatalogChanged(ctx context.Context) {
	if !c.ha.cfg.Disabled {
		c.requeueTarget(ctx, fleet.AllTarget())
	}
}

// haInputKey is a digest of everything hadiscovery.Build reads from in
// (Withdrawn aside, which publishHAConfig derives from the components):
// each field length-prefixed, so distinct inputs give distinct keys.
func haInputKey(in hadiscovery.Input) [32]byte {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	for _, s := range []string{in.Prefix, in.Device, in.Name, in.AgentVersion, in.ChorusVersion, in.Gateway} {
		put(s)
	}
	for _, sk := range in.Skills {
		managed := "0"
		if sk.Managed {
			managed = "1"
		}
		put(sk.ID)
		put(sk.Title)
		put(managed)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}
