package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// runEngine is the rollout engine: one goroutine, a pass every Tick and on
// every Kick (an execution ended, a device came online, an operator acted).
// A pass re-reads everything from the store, so a restarted controller
// simply goes on: in-progress executions keep being judged by the
// reconciler and queued ones start when their turn comes.
func (c *Controller) runEngine() {
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		c.enginePass(c.ctx)
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
		}
	}
}

func (c *Controller) enginePass(ctx context.Context) {
	rs, err := c.store.ListRollouts(ctx, fleet.RolloutFilter{
		States: []fleet.RolloutState{fleet.RolloutQueued, fleet.RolloutInProgress, fleet.RolloutPaused}})
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("rollout engine: list rollouts", "error", err)
		}
		return
	}
	if len(rs) == 0 {
		return
	}
	online, err := c.onlineDevices(ctx)
	if err != nil {
		c.log.Warn("rollout engine: list devices", "error", err)
		return
	}
	// Oldest first: an older rollout's turn comes before a newer one's.
	for i := len(rs) - 1; i >= 0; i-- {
		if err := c.step(ctx, rs[i], online); err != nil && ctx.Err() == nil {
			c.log.Warn("rollout engine", "rollout", rs[i].ID, "error", err)
		}
	}
}

func (c *Controller) onlineDevices(ctx context.Context) (map[string]bool, error) {
	yes := true
	ds, err := c.store.ListDevices(ctx, fleet.DeviceFilter{Online: &yes})
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ds))
	for _, d := range ds {
		out[d.ID] = true
	}
	return out, nil
}

// tally counts executions by state.
type tally map[fleet.ExecState]int

func (t tally) ended() int {
	return t[fleet.ExecSucceeded] + t[fleet.ExecFailed] + t[fleet.ExecTimedOut]
}
func (t tally) bad() int { return t[fleet.ExecFailed] + t[fleet.ExecTimedOut] }
func (t tally) active() int {
	return t[fleet.ExecQueued] + t[fleet.ExecInProgress]
}

// step advances one rollout: time out, judge the rollout as a whole, then
// start what may start.
func (c *Controller) step(ctx context.Context, r *fleet.Rollout, online map[string]bool) error {
	if r.State == fleet.RolloutQueued {
		var err error
		if r, err = c.setRolloutState(ctx, fleet.ActorController, r.ID, fleet.RolloutInProgress, ""); err != nil {
			return err
		}
	}
	execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID})
	if err != nil {
		return err
	}
	c.timeOut(ctx, r, execs)
	n := tally{}
	canaryBad, canaryPending := "", false
	for _, e := range execs {
		n[e.State]++
		if e.Canary && (e.State == fleet.ExecFailed || e.State == fleet.ExecTimedOut) && canaryBad == "" {
			canaryBad = fmt.Sprintf("canary %s %s: %s", e.DeviceID, e.State, e.Reason)
		}
		if e.Canary && e.State != fleet.ExecSucceeded {
			canaryPending = true
		}
	}
	if r.State != fleet.RolloutInProgress {
		return nil // paused: running executions finish and time out, none start
	}
	switch {
	case canaryBad != "":
		return c.endRollout(ctx, r, execs, fleet.RolloutFailed, canaryBad)
	case c.overThreshold(r, n):
		reason := fmt.Sprintf("failure threshold: %d of %d ended executions failed or timed out (threshold %g%%)",
			n.bad(), n.ended(), r.FailureThresholdPct)
		_, err := c.setRolloutState(ctx, fleet.ActorController, r.ID, fleet.RolloutAborted, reason)
		return err
	case n.active() == 0 && n.bad() > 0:
		return c.endRollout(ctx, r, nil, fleet.RolloutFailed, fmt.Sprintf("%d of %d executions failed or timed out", n.bad(), len(execs)))
	case n.active() == 0 && n[fleet.ExecSucceeded] == 0:
		_, err := c.setRolloutState(ctx, fleet.ActorController, r.ID, fleet.RolloutCanceled, "every execution was canceled")
		return err
	case n.active() == 0:
		if err := c.assignTargets(ctx, r); err != nil {
			return err
		}
		_, err := c.setRolloutState(ctx, fleet.ActorController, r.ID, fleet.RolloutSucceeded, "")
		return err
	}
	return c.startQueued(ctx, r, execs, n, canaryPending, online)
}

func (c *Controller) overThreshold(r *fleet.Rollout, n tally) bool {
	if r.FailureThresholdPct <= 0 || n.ended() == 0 || n.ended() < r.MinExecuted {
		return false
	}
	return float64(n.bad())*100 >= r.FailureThresholdPct*float64(n.ended())
}

// endRollout cancels the queued executions (which a failed rollout would
// otherwise leave behind) and moves the rollout to its final state.
func (c *Controller) endRollout(ctx context.Context, r *fleet.Rollout, execs []*fleet.Execution, to fleet.RolloutState, reason string) error {
	for _, e := range execs {
		if e.State == fleet.ExecQueued {
			c.finish(ctx, e, fleet.ExecCanceled, "rollout "+string(to))
		}
	}
	_, err := c.setRolloutState(ctx, fleet.ActorController, r.ID, to, reason)
	return err
}

// timeOut ends the executions in progress for longer than the strategy's timeout.
func (c *Controller) timeOut(ctx context.Context, r *fleet.Rollout, execs []*fleet.Execution) {
	if r.Timeout <= 0 {
		return
	}
	now := c.cfg.Now()
	for _, e := range execs {
		if e.State == fleet.ExecInProgress && now.Sub(e.StartedAt) > r.Timeout {
			c.finish(ctx, e, fleet.ExecTimedOut, fmt.Sprintf("no result within %s", r.Timeout))
			e.State = fleet.ExecTimedOut
		}
	}
}

// startQueued starts queued executions on online devices, canaries first
// (the rest wait until every canary succeeded), within max in flight.
// Offline devices stay queued and start when they come back.
func (c *Controller) startQueued(ctx context.Context, r *fleet.Rollout, execs []*fleet.Execution, n tally, canaryPending bool, online map[string]bool) error {
	slots := len(execs)
	if r.MaxInFlight > 0 {
		slots = r.MaxInFlight - n[fleet.ExecInProgress]
	}
	for _, e := range execs {
		if slots <= 0 {
			return nil
		}
		if e.State != fleet.ExecQueued || (canaryPending && !e.Canary) || !online[e.DeviceID] {
			continue
		}
		if err := c.startExecution(ctx, r, e); err != nil {
			return err
		}
		slots--
	}
	return nil
}

// startExecution puts the device-level assignment that makes the change,
// then marks the execution in progress and reconciles the device. The order
// makes a crash in between harmless: the execution is still queued, and
// putting the same assignment again changes no desired document.
func (c *Controller) startExecution(ctx context.Context, r *fleet.Rollout, e *fleet.Execution) error {
	a, err := c.assignmentFor(ctx, r, e.DeviceID)
	if err != nil {
		return err
	}
	if err := c.store.PutAssignment(ctx, a); err != nil {
		if fleet.ErrorCode(err) == fleet.ENOTFOUND {
			c.finish(ctx, e, fleet.ExecFailed, err.Error())
			return nil
		}
		return fmt.Errorf("start %s on %s: %w", r.SkillID, e.DeviceID, err)
	}
	doc, err := c.store.DesiredFor(ctx, e.DeviceID)
	if err != nil {
		return fmt.Errorf("start %s on %s: %w", r.SkillID, e.DeviceID, err)
	}
	key := execKey{e.RolloutID, e.DeviceID}
	c.pubMu.Lock()
	c.startVer[key] = doc.Version
	c.pubMu.Unlock()
	if _, err := c.store.TransitionExecution(ctx, e.RolloutID, e.DeviceID, fleet.ExecInProgress, ""); err != nil {
		c.pubMu.Lock()
		delete(c.startVer, key)
		c.pubMu.Unlock()
		return fmt.Errorf("start %s on %s: %w", r.SkillID, e.DeviceID, err)
	}
	e.State = fleet.ExecInProgress
	c.queue.Add(e.DeviceID)
	return nil
}

// assignmentFor is the device-level assignment a rollout's execution puts.
// An install keeps the settings of the device's existing assignment.
func (c *Controller) assignmentFor(ctx context.Context, r *fleet.Rollout, dev string) (*fleet.Assignment, error) {
	a := &fleet.Assignment{SkillID: r.SkillID, Target: fleet.DeviceTarget(dev), Action: fleet.AssignUninstall}
	if r.Action == fleet.RolloutUninstall {
		return a, nil
	}
	a.Action, a.Version = fleet.AssignInstall, r.Version
	old, err := c.store.GetAssignment(ctx, r.SkillID, a.Target)
	switch {
	case err == nil && old.Action != fleet.AssignUninstall:
		a.Settings = old.Settings
	case err != nil && fleet.ErrorCode(err) != fleet.ENOTFOUND:
		return nil, err
	}
	return a, nil
}

// assignTargets puts the tag and all assignments of a rollout that
// succeeded, so a device that joins the tag (or the fleet) later gets the
// change too (executions only put device assignments: the rollout paces the
// devices it found when it was created). Putting them again after a crash
// changes nothing.
func (c *Controller) assignTargets(ctx context.Context, r *fleet.Rollout) error {
	for _, t := range r.Targets {
		if t.Kind == fleet.TargetDevice {
			continue
		}
		a := &fleet.Assignment{SkillID: r.SkillID, Target: t, Action: fleet.AssignUninstall}
		if r.Action == fleet.RolloutInstall {
			a.Action, a.Version = fleet.AssignInstall, r.Version
			if old, err := c.store.GetAssignment(ctx, r.SkillID, t); err == nil && old.Action != fleet.AssignUninstall {
				a.Settings = old.Settings
			}
		}
		if err := c.store.PutAssignment(ctx, a); err != nil {
			return fmt.Errorf("rollout %d: assign %s to %s: %w", r.ID, r.SkillID, t, err)
		}
		c.requeueTarget(ctx, t)
	}
	return nil
}
