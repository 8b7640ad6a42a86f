package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// engineGap is the least time between two passes the engine makes on a
// Kick: kicks that come faster (an execution ending on each of thousands of
// devices) are served by one pass, so a pass's cost is not paid per device.
const engineGap = 50 * time.Millisecond

// runEngine is the rollout engine: one goroutine, a pass every Tick and on
// every Kick (an execution ended, a device with queued executions came
// online, an operator acted), at most one per engineGap.
// A pass re-reads the rollouts from the store, so a restarted controller
// simply goes on: in-progress executions keep being judged by the
// reconciler and queued ones start when their turn comes.
func (c *Controller) runEngine() {
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		c.enginePass(c.ctx)
		last := time.Now()
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		case <-c.kick:
			if d := engineGap - time.Since(last); d > 0 {
				select {
				case <-c.ctx.Done():
					return
				case <-time.After(d):
				}
			}
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
	active := make(map[int64]bool, len(rs))
	for _, r := range rs {
		active[r.ID] = true
	}
	c.pruneRollouts(active)
	c.gw.setRollouts(len(rs))
	waiting := map[string]bool{}
	// Oldest first: an older rollout's turn comes before a newer one's.
	for i := len(rs) - 1; i >= 0; i-- {
		if err := c.step(ctx, rs[i], waiting); err != nil && ctx.Err() == nil {
			c.log.Warn("rollout engine", "rollout", rs[i].ID, "error", err)
		}
	}
	c.pubMu.Lock()
	c.waiting = waiting
	c.pubMu.Unlock()
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
func (t tally) total() int {
	n := 0
	for _, v := range t {
		n += v
	}
	return n
}

// step advances one rollout: time out, judge the rollout as a whole, then
// start what may start.
//
// It works from the rollout's execution counts (read with it) and lists only
// the executions it acts on: the canaries, the in-progress ones when one may
// have timed out, the queued ones when one may start. The counts may be
// older than those lists, never newer: executions only move forward and
// only the engine starts them, so stale counts overstate the active ones
// and the engine errs on waiting (the execution that ended kicks it again).
func (c *Controller) step(ctx context.Context, r *fleet.Rollout, waiting map[string]bool) error {
	if r.State == fleet.RolloutQueued {
		var err error
		if r, err = c.moveRollout(ctx, fleet.ActorController, r.ID, fleet.RolloutQueued, fleet.RolloutInProgress, ""); err != nil {
			return ignoreChanged(err)
		}
	}
	n := tally{}
	for s, v := range r.Counts {
		n[s] = v
	}
	var canaries []*fleet.Execution
	if r.Canary > 0 {
		es, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, Limit: r.Canary})
		if err != nil {
			return err
		}
		for _, e := range es { // canaries sort first
			if e.Canary {
				canaries = append(canaries, e)
			}
		}
	}
	if err := c.timeOut(ctx, r, n, canaries); err != nil {
		return err
	}
	if err := c.expire(ctx, r, n, canaries); err != nil {
		return err
	}
	canaryBad, canaryPending := "", false
	for _, e := range canaries {
		if (e.State == fleet.ExecFailed || e.State == fleet.ExecTimedOut) && canaryBad == "" {
			canaryBad = fmt.Sprintf("canary %s %s: %s", e.DeviceID, e.State, e.Reason)
		}
		if e.State != fleet.ExecSucceeded {
			canaryPending = true
		}
	}
	if r.State != fleet.RolloutInProgress {
		c.setRateHeld(r.ID, 0)
		return nil // paused: running executions finish and time out, none start
	}
	switch {
	case canaryBad != "":
		return c.endRollout(ctx, r, n, fleet.RolloutFailed, canaryBad)
	case c.overThreshold(r, n):
		reason := fmt.Sprintf("failure threshold: %d of %d ended executions failed or timed out (threshold %g%%)",
			n.bad(), n.ended(), r.FailureThresholdPct)
		return c.engineMove(ctx, r, fleet.RolloutAborted, reason)
	case n.active() == 0 && n.bad() > 0:
		return c.endRollout(ctx, r, tally{}, fleet.RolloutFailed, fmt.Sprintf("%d of %d executions failed or timed out", n.bad(), n.total()))
	case n.active() == 0 && n[fleet.ExecSucceeded] == 0:
		return c.engineMove(ctx, r, fleet.RolloutCanceled, "every execution was canceled")
	case n.active() == 0:
		if err := c.assignTargets(ctx, r); err != nil {
			return err
		}
		return c.engineMove(ctx, r, fleet.RolloutSucceeded, "")
	}
	return c.startQueued(ctx, r, n, canaryPending, waiting)
}

func (c *Controller) overThreshold(r *fleet.Rollout, n tally) bool {
	if r.FailureThresholdPct <= 0 || n.ended() == 0 || n.ended() < r.MinExecuted {
		return false
	}
	return float64(n.bad())*100 >= r.FailureThresholdPct*float64(n.ended())
}

// endRollout cancels the queued executions (which a failed rollout would
// otherwise leave behind) and moves the rollout to its final state.
func (c *Controller) endRollout(ctx context.Context, r *fleet.Rollout, n tally, to fleet.RolloutState, reason string) error {
	if n[fleet.ExecQueued] > 0 {
		execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, States: []fleet.ExecState{fleet.ExecQueued}})
		if err != nil {
			return err
		}
		for _, e := range execs {
			c.finish(ctx, e, fleet.ExecCanceled, "rollout "+string(to))
		}
	}
	return c.engineMove(ctx, r, to, reason)
}

// engineMove moves r on from the state the engine read it in. An operator's
// change in between (a pause, say) wins: the engine leaves the rollout as
// it is now and looks again at the kick that change made.
func (c *Controller) engineMove(ctx context.Context, r *fleet.Rollout, to fleet.RolloutState, reason string) error {
	_, err := c.moveRollout(ctx, fleet.ActorController, r.ID, r.State, to, reason)
	return ignoreChanged(err)
}

// ignoreChanged drops the ECONFLICT of a rollout that changed meanwhile.
func ignoreChanged(err error) error {
	if fleet.ErrorCode(err) == fleet.ECONFLICT {
		return nil
	}
	return err
}

// timeOut ends the executions in progress for longer than the strategy's
// timeout, and counts them in n (and in canaries). It lists the in-progress
// executions only once the earliest deadline it knows of has passed.
//
// Ages are measured on the monotonic clock (see progress), never as the
// wall clock minus a StartedAt read back from the store: a wall-clock step
// (NTP setting the clock of a Pi without an RTC) would otherwise time out
// every execution at once, or hold them an hour past their timeout.
func (c *Controller) timeOut(ctx context.Context, r *fleet.Rollout, n tally, canaries []*fleet.Execution) error {
	if r.Timeout <= 0 || n[fleet.ExecInProgress] == 0 {
		return nil
	}
	now := time.Now() // monotonic reading
	if at, ok := c.nextTimeout[r.ID]; ok && !now.After(at) {
		return nil
	}
	execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, States: []fleet.ExecState{fleet.ExecInProgress}})
	if err != nil {
		return err
	}
	delete(c.nextTimeout, r.ID)
	c.forgetProgress(r.ID, execs)
	wall := c.cfg.Now()
	for _, e := range execs {
		if c.finishPending(e) {
			continue // judged already; its verdict is on its way to the store and wins over a timeout
		}
		p := c.progressOf(r, e, wall, now)
		if p.credit+now.Sub(p.seen) > r.Timeout {
			c.finish(ctx, e, fleet.ExecTimedOut, fmt.Sprintf("no result within %s", r.Timeout))
			delete(c.inProgress, execKey{e.RolloutID, e.DeviceID})
			n[fleet.ExecInProgress]--
			n[fleet.ExecTimedOut]++
			for _, k := range canaries {
				if k.DeviceID == e.DeviceID && k.State == fleet.ExecInProgress {
					k.State = fleet.ExecTimedOut
				}
			}
			continue
		}
		c.noteDeadline(r, p)
	}
	return nil
}

// progress is how the engine ages an in-progress execution: seen is the
// monotonic clock's reading when this controller first saw it in progress
// (when it started it, or at its first pass after a restart), and credit
// the age it had then. An execution this controller started has no credit;
// one found after a restart is credited its stored age by the wall clock,
// kept within [0, timeout], so a clock that was stepped while the gateway
// was down at worst restarts its timeout or ends it at the first pass.
type progress struct {
	seen   time.Time
	credit time.Duration
}

// progressOf returns e's progress, recording it on first sight.
func (c *Controller) progressOf(r *fleet.Rollout, e *fleet.Execution, wall, now time.Time) progress {
	k := execKey{e.RolloutID, e.DeviceID}
	p, ok := c.inProgress[k]
	if !ok {
		p = progress{seen: now, credit: min(max(wall.Sub(e.StartedAt), 0), r.Timeout)}
		c.inProgress[k] = p
	}
	return p
}

// forgetProgress drops the progress of rollout id's executions that are no
// longer in progress (execs is the complete in-progress list).
func (c *Controller) forgetProgress(id int64, execs []*fleet.Execution) {
	still := make(map[string]bool, len(execs))
	for _, e := range execs {
		still[e.DeviceID] = true
	}
	for k := range c.inProgress {
		if k.rollout == id && !still[k.device] {
			delete(c.inProgress, k)
		}
	}
}

// noteDeadline remembers the earliest deadline (a monotonic reading) of r's
// in-progress executions.
func (c *Controller) noteDeadline(r *fleet.Rollout, p progress) {
	if r.Timeout <= 0 {
		return
	}
	at := p.seen.Add(r.Timeout - p.credit)
	if old, ok := c.nextTimeout[r.ID]; !ok || at.Before(old) {
		c.nextTimeout[r.ID] = at
	}
}

// startQueued starts queued executions on online devices, canaries first
// (the rest wait until every canary succeeded), within max in flight and
// the start rate. Offline devices stay queued and start when they come back
// (they are recorded in waiting, so their coming online wakes the engine);
// executions the rate holds back start at a later pass (every Tick).
func (c *Controller) startQueued(ctx context.Context, r *fleet.Rollout, n tally, canaryPending bool, waiting map[string]bool) error {
	c.setRateHeld(r.ID, 0)
	if n[fleet.ExecQueued] == 0 {
		return nil
	}
	slots := n.total()
	if r.MaxInFlight > 0 {
		slots = r.MaxInFlight - n[fleet.ExecInProgress]
	}
	if slots <= 0 {
		return nil // an execution that ends kicks the engine
	}
	now := c.cfg.Now()
	rateLeft, rate := c.rateSlots(r, now)
	execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{RolloutID: r.ID, States: []fleet.ExecState{fleet.ExecQueued}})
	if err != nil {
		return err
	}
	for _, e := range execs {
		waiting[e.DeviceID] = true
	}
	// Published before the online set is read: a device that comes online
	// after the reads below finds itself waiting and kicks the engine.
	c.pubMu.Lock()
	for _, e := range execs {
		c.waiting[e.DeviceID] = true
	}
	c.pubMu.Unlock()
	var batch []*fleet.Execution
	for _, e := range execs {
		if slots <= 0 {
			break
		}
		if e.State != fleet.ExecQueued || (canaryPending && !e.Canary) || !c.isOnline(e.DeviceID) {
			continue
		}
		if rateLeft == 0 {
			c.setRateHeld(r.ID, rate)
			break
		}
		batch = append(batch, e)
		slots--
		rateLeft--
		if len(batch) == startBatch {
			if err := c.startExecutions(ctx, r, batch, now); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return c.startExecutions(ctx, r, batch, now)
}

// startBatch is the most executions one store transaction starts: larger
// batches save commits, smaller ones hold the writer for less time and let
// the first devices of a large rollout start sooner.
const startBatch = 64

// startExecutions starts es (queued executions of r) in one store
// transaction (fleet.RolloutService.StartExecutions): each puts the
// device-level assignment that makes the change, its device's desired
// document is recomputed and the execution is marked in progress, all or
// nothing, so a crash leaves every execution queued; then the devices are
// reconciled. An execution whose device, skill or version is gone fails.
//
// Until the store answers, judge finds the executions starting at an unknown
// version (startVersion): a device pass that reads the execution in
// progress before this records the version it started with must not judge
// it by an older document.
func (c *Controller) startExecutions(ctx context.Context, r *fleet.Rollout, es []*fleet.Execution, now time.Time) error {
	if len(es) == 0 {
		return nil
	}
	starts := make([]fleet.ExecStart, 0, len(es))
	for _, e := range es {
		a, keep := assignmentFor(r, e.DeviceID)
		starts = append(starts, fleet.ExecStart{RolloutID: e.RolloutID, Assignment: a, KeepSettings: keep})
	}
	c.pubMu.Lock()
	for _, e := range es {
		c.startVer[execKey{e.RolloutID, e.DeviceID}] = startingVersion
	}
	c.pubMu.Unlock()
	res, err := c.store.StartExecutions(ctx, starts)
	c.pubMu.Lock()
	for i, e := range es {
		key := execKey{e.RolloutID, e.DeviceID}
		if err != nil || res[i].Err != nil {
			delete(c.startVer, key)
		} else {
			c.startVer[key] = res[i].Desired.Version
		}
	}
	c.pubMu.Unlock()
	if err != nil {
		return fmt.Errorf("start %s: %w", r.SkillID, err)
	}
	for i, e := range es {
		c.noteStart(r, now)
		if res[i].Err != nil {
			c.finish(ctx, e, fleet.ExecFailed, res[i].Err.Error())
			continue
		}
		e.State = fleet.ExecInProgress
		key := execKey{e.RolloutID, e.DeviceID}
		p := progress{seen: time.Now()} // started just now: no credit
		c.inProgress[key] = p
		c.noteDeadline(r, p)
		c.queue.Add(e.DeviceID)
	}
	c.changed(rolloutSubject(r.ID))
	return nil
}

// assignmentFor is the device-level assignment a rollout's execution puts.
// An install keeps the settings of the device's existing assignment unless
// that one is an uninstall (keep: the store reads them in the start's own
// transaction, fleet.ExecStart.KeepSettings, instead of a read per device
// before the batch).
func assignmentFor(r *fleet.Rollout, dev string) (a *fleet.Assignment, keep bool) {
	a = &fleet.Assignment{SkillID: r.SkillID, Target: fleet.DeviceTarget(dev), Action: fleet.AssignUninstall}
	if r.Action == fleet.RolloutUninstall {
		return a, false
	}
	a.Action, a.Version = fleet.AssignInstall, r.Version
	return a, true
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
