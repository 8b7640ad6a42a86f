package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// rateWindow is the span a start rate counts starts over (per minute).
const rateWindow = time.Minute

// expire ends r's queued executions as timed_out once its overall deadline
// (Strategy.Deadline from its creation, on the injected wall clock) has
// passed, counting them in n and canaries. Executions in progress are left
// to the per-device timeout (docs/rollouts.md).
func (c *Controller) expire(ctx context.Context, r *fleet.Rollout, n tally, canaries []*fleet.Execution) error {
	if r.Deadline <= 0 || n[fleet.ExecQueued] == 0 || c.cfg.Now().Before(r.CreatedAt.Add(r.Deadline)) {
		return nil
	}
	execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, States: []fleet.ExecState{fleet.ExecQueued}})
	if err != nil {
		return err
	}
	reason := fmt.Sprintf("%s (%s after creation)", fleet.ReasonDeadline, r.Deadline)
	for _, e := range execs {
		c.finish(ctx, e, fleet.ExecTimedOut, reason)
		n[fleet.ExecQueued]--
		n[fleet.ExecTimedOut]++
		for _, k := range canaries {
			if k.DeviceID == e.DeviceID && k.State == fleet.ExecQueued {
				k.State, k.Reason = fleet.ExecTimedOut, reason
			}
		}
	}
	return nil
}

// rateSlots is how many more executions of r may start now under its start
// rate (-1: no cap), and the rate in force. Starts are counted over the last
// rateWindow on the injected wall clock; the log is the engine's own and
// starts empty after a restart (at worst one window's worth starts early).
// A start that lies in the future was logged before the clock was set back
// (NTP on a Pi without an RTC): it is dropped rather than holding the
// rollout until the clock catches up.
func (c *Controller) rateSlots(r *fleet.Rollout, now time.Time) (slots, rate int) {
	rate = r.StartRate(now.Sub(r.StartedAt))
	if rate <= 0 {
		return -1, 0
	}
	log := c.starts[r.ID]
	keep := log[:0]
	for _, at := range log {
		if age := now.Sub(at); age >= 0 && age < rateWindow {
			keep = append(keep, at)
		}
	}
	c.starts[r.ID] = keep
	return max(rate-len(keep), 0), rate
}

// noteStart records a start for r's start rate.
func (c *Controller) noteStart(r *fleet.Rollout, now time.Time) {
	if r.RatePerMin > 0 {
		c.starts[r.ID] = append(c.starts[r.ID], now)
	}
}

// setRateHeld publishes whether r's start rate held back a queued execution
// on an online device in the engine's last pass (0: it did not), for the
// reasons readers see.
func (c *Controller) setRateHeld(id int64, rate int) {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	if rate > 0 {
		c.rateHeld[id] = rate
	} else {
		delete(c.rateHeld, id)
	}
}

// explain fills the Reason and Blocked of r's queued executions that have
// no stored reason, why each cannot start now, and of its in-progress
// executions whose device is offline (docs/rollouts.md). It reads
// the controller's online set (the one the engine starts by) and, for
// offline devices, when they were last heard.
func (c *Controller) explain(ctx context.Context, r *fleet.Rollout, execs []*fleet.Execution) error {
	if r.State.Terminal() {
		return nil
	}
	c.pubMu.Lock()
	online := make(map[string]bool, len(execs))
	for _, e := range execs {
		online[e.DeviceID] = c.online[e.DeviceID]
	}
	rateHeld := c.rateHeld[r.ID]
	c.pubMu.Unlock()

	canaryPending, canaryLive := false, false
	anyOffline := false
	for _, e := range execs {
		if e.Canary && e.State != fleet.ExecSucceeded {
			canaryPending = true
			if !e.State.Terminal() && online[e.DeviceID] {
				canaryLive = true
			}
		}
		if !e.State.Terminal() && !online[e.DeviceID] {
			anyOffline = true
		}
	}
	lastSeen := map[string]time.Time{}
	if anyOffline {
		no := false
		ds, err := c.store.ListDevices(ctx, fleet.DeviceFilter{Online: &no})
		if err != nil {
			return fmt.Errorf("explain rollout %d: %w", r.ID, err)
		}
		for _, d := range ds {
			lastSeen[d.ID] = d.LastSeen
		}
	}
	offline := func(e *fleet.Execution) {
		e.Blocked = true
		e.Reason = fleet.ReasonOffline
		if at := lastSeen[e.DeviceID]; !at.IsZero() {
			e.Reason = fleet.ReasonOfflineSince + " " + at.UTC().Format(time.RFC3339)
		}
	}
	inFlight := r.Counts[fleet.ExecInProgress]
	for _, e := range execs {
		if e.State == fleet.ExecInProgress && !online[e.DeviceID] {
			offline(e) // went away mid-change: it finishes when it is back, or times out
			continue
		}
		if e.State != fleet.ExecQueued || e.Reason != "" {
			continue
		}
		switch {
		case !online[e.DeviceID]:
			offline(e)
		case r.State == fleet.RolloutPaused:
			e.Reason = fleet.ReasonPaused
		case canaryPending && !e.Canary:
			// Blocked when no canary can progress: each is offline.
			e.Blocked = !canaryLive
			e.Reason = fleet.ReasonWaitingCanary
		case r.MaxInFlight > 0 && inFlight >= r.MaxInFlight:
			e.Reason = fmt.Sprintf("%s (max in flight %d)", fleet.ReasonMaxInFlight, r.MaxInFlight)
		case rateHeld > 0:
			e.Reason = fmt.Sprintf("%s (%d/min)", fleet.ReasonRate, rateHeld)
		default:
			e.Reason = fleet.ReasonWaitingToStart
		}
	}
	return nil
}
