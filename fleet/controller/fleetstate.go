package controller

import (
	"context"

	"github.com/chorus-edge/chorus/fleet"
)

// rolloutKey is what never changes in a rollout once created: what judge
// needs to settle its executions.
type rolloutKey struct {
	skillID string
	version string
	action  fleet.RolloutAction
}

// seedOnline loads the online set from the store (at start, before the
// inbox applies any presence).
func (c *Controller) seedOnline(ctx context.Context) error {
	yes := true
	ds, err := c.store.ListDevices(ctx, fleet.DeviceFilter{Online: &yes})
	if err != nil {
		return err
	}
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	for _, d := range ds {
		c.online[d.ID] = true
	}
	return nil
}

// setOnline records a presence the store applied. It reports whether the
// engine should look again: the device is online and has queued executions.
func (c *Controller) setOnline(dev string, online bool) (wake bool) {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	if online {
		c.online[dev] = true
	} else {
		delete(c.online, dev)
	}
	return online && c.waiting[dev]
}

func (c *Controller) isOnline(dev string) bool {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	return c.online[dev]
}

// rolloutFor returns the immutable fields of a rollout (skill, version,
// action) as a *fleet.Rollout, from the cache or, once, from the store.
func (c *Controller) rolloutFor(ctx context.Context, id int64) (*fleet.Rollout, error) {
	c.pubMu.Lock()
	k, ok := c.rollouts[id]
	c.pubMu.Unlock()
	if !ok {
		r, err := c.store.GetRollout(ctx, id)
		if err != nil {
			return nil, err
		}
		k = rolloutKey{skillID: r.SkillID, version: r.Version, action: r.Action}
		c.pubMu.Lock()
		c.rollouts[id] = k
		c.pubMu.Unlock()
	}
	return &fleet.Rollout{ID: id, SkillID: k.skillID, Version: k.version, Action: k.action}, nil
}

// pruneRollouts drops the cached fields of rollouts that are no longer
// active (a later judge of one fetches it again).
func (c *Controller) pruneRollouts(active map[int64]bool) {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	for id := range c.rollouts {
		if !active[id] {
			delete(c.rollouts, id)
		}
	}
	for id := range c.rateHeld {
		if !active[id] {
			delete(c.rateHeld, id)
		}
	}
	for id := range c.starts {
		if !active[id] {
			delete(c.starts, id)
		}
	}
	for id := range c.nextTimeout {
		if !active[id] {
			delete(c.nextTimeout, id)
		}
	}
	for k := range c.inProgress {
		if !active[k.rollout] {
			delete(c.inProgress, k)
		}
	}
}
