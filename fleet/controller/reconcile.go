package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/desired"
	"github.com/chorus-edge/chorus/gateway/state"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// reconcileTimeout bounds one pass over one device, so a stuck store call
// gives the worker back (the device is retried with backoff).
const reconcileTimeout = 30 * time.Second

func (c *Controller) runWorker() {
	for {
		id, ok := c.queue.Get()
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(c.ctx, reconcileTimeout)
		res, err := c.Reconcile(ctx, id)
		cancel()
		switch {
		case err == nil || c.ctx.Err() != nil:
		case IsTerminal(err):
			c.log.Error("reconcile failed; not retrying until the device changes", "device", id, "error", err)
		default:
			c.log.Warn("reconcile failed; retrying with backoff", "device", id, "error", err)
		}
		c.queue.Done(id, res, err)
	}
}

// Reconcile brings one device's published desired document and its
// in-progress executions in line with the store. It is level-based and
// idempotent (STYLE.md §6): it re-reads everything on every pass. It says
// what should happen next and the work queue does it (STYLE.md §15): a
// Result with RequeueAfter while the device is behind its document, an
// error to retry with backoff, or a TerminalError when retrying cannot help
// (a desired document that cannot be encoded).
//
//  1. Recompute the desired document (assignments + tags + catalog); publish
//     it, retained, when its version is newer than the last one published
//     by this controller (so at start-up every document is published again),
//     or again when the device is online and has reported an older applied
//     version for RepublishAge since the last publish.
//  2. Judge the device's in-progress executions against its skills report.
//
// Before these it repairs the device's retained availability if a late Will
// (or a stale re-publish) sits there (availability.go), and records the
// device in the gateway's fleet summary (gatewaystate.go); after 1, its Home
// Assistant topics (hareconcile.go).
func (c *Controller) Reconcile(ctx context.Context, id string) (res Result, err error) {
	defer func(start time.Time) { c.metrics.observeReconcile(start, c.cfg.Now(), err) }(c.cfg.Now())
	removals := c.removals.Load() // before the device is read (reconcileHA)
	// d's report and rep are used only until this pass returns (nothing
	// below keeps them or their memory), so they live in a pooled table.
	table := c.reportTable()
	defer c.putReportTable(table)
	d, err := c.deviceInto(ctx, table, id)
	if fleet.ErrorCode(err) == fleet.ENOTFOUND {
		c.removed(id)
		return Result{}, nil
	}
	if err != nil {
		return Result{}, fmt.Errorf("reconcile %s: %w", id, err)
	}
	rep, _ := table.parse(d.Reported) // validated when stored
	c.gw.observe(d.ID, d.Online, loadedSkills(rep))
	if err := c.reconcileAvailability(d); err != nil {
		return Result{}, fmt.Errorf("reconcile %s: availability: %w", id, err)
	}
	doc, err := c.store.DesiredFor(ctx, id)
	if err != nil {
		return Result{}, fmt.Errorf("reconcile %s: desired: %w", id, err)
	}
	if res, err = c.publishIfNeeded(d, doc); err != nil {
		return Result{}, reconcileError(id, err)
	}
	if err := c.reconcileHA(ctx, d, rep, removals); err != nil {
		return Result{}, fmt.Errorf("reconcile %s: %w", id, err)
	}
	if err := c.judge(ctx, d, doc, rep); err != nil {
		return Result{}, fmt.Errorf("reconcile %s: %w", id, err)
	}
	return res, nil
}

// reconcileError names the device and keeps err's class (terminal or not).
func reconcileError(id string, err error) error {
	wrapped := fmt.Errorf("reconcile %s: %w", id, err)
	if IsTerminal(err) {
		return TerminalError(wrapped)
	}
	return wrapped
}

// publishIfNeeded publishes doc when the device has not been sent it, or
// again when it is online and has stayed behind it for RepublishAge; while
// it is behind, the result asks for a pass when that age is reached.
func (c *Controller) publishIfNeeded(d *fleet.Device, doc fleet.Desired) (Result, error) {
	now := c.cfg.Now()
	c.pubMu.Lock()
	last, ok := c.published[d.ID]
	c.pubMu.Unlock()
	behind := d.Online && d.AppliedVersion < doc.Version
	switch {
	case !ok || doc.Version > last.version:
	case behind && now.Sub(last.at) >= c.cfg.RepublishAge:
		c.log.Info("device behind its desired document; publishing again", "device", d.ID,
			"applied", d.AppliedVersion, "desired", doc.Version)
	default:
		if behind {
			return Result{RequeueAfter: c.cfg.RepublishAge - now.Sub(last.at)}, nil
		}
		return Result{}, nil
	}
	// Recorded before it is sent: a device that reads the new document can
	// at once download what it or the one before names (artifactFor).
	c.pubMu.Lock()
	prev := last.prev
	if ok && doc.Version > last.version {
		prev = last.artifacts
	}
	entry := publishedDoc{version: doc.Version, at: now, artifacts: artifactsOf(doc), prev: prev}
	c.published[d.ID] = entry
	c.pubMu.Unlock()
	if err := c.publishDesired(d.ID, doc); err != nil {
		c.pubMu.Lock()
		if ok {
			c.published[d.ID] = last // not sent: the next pass sends it again
		} else {
			delete(c.published, d.ID)
		}
		c.pubMu.Unlock()
		return Result{}, err
	}
	// Remembered again once sent: a removal that forgot the device while
	// this was being sent finds it and clears the document (removed).
	c.pubMu.Lock()
	c.published[d.ID] = entry
	c.pubMu.Unlock()
	c.changed("device/" + d.ID)
	if behind {
		return Result{RequeueAfter: c.cfg.RepublishAge}, nil
	}
	return Result{}, nil
}

// publishDesired publishes doc retained at QoS 1 on chorus/v1/<id>/desired,
// encoded by gateway/desired exactly as the agent parses it. A document that
// cannot be encoded is a TerminalError: the same store gives the same
// document, so only a change to it can help (and queues the device again).
func (c *Controller) publishDesired(id string, doc fleet.Desired) error {
	wire, err := toWire(doc)
	if err != nil {
		return TerminalError(fmt.Errorf("desired document: %w", err))
	}
	b, err := desired.Encode(wire)
	if err != nil {
		return TerminalError(fmt.Errorf("desired document: %w", err))
	}
	t, err := topic.Desired(id)
	if err != nil {
		return TerminalError(err)
	}
	if err := c.cfg.Broker.Publish(broker.Message{Topic: t, Payload: b, QoS: 1, Retain: true, ContentType: "application/json"}); err != nil {
		return err
	}
	c.metrics.desired.Inc()
	return nil
}

func toWire(d fleet.Desired) (desired.Doc, error) {
	out := desired.Doc{Version: d.Version, Skills: make(map[string]desired.Skill, len(d.Skills))}
	for id, s := range d.Skills {
		ws := desired.Skill{Version: s.Version, SHA256: s.SHA256, Size: s.Size, URL: s.URL}
		if len(s.Settings) > 0 {
			dec := json.NewDecoder(bytes.NewReader(s.Settings))
			dec.UseNumber() // keep numbers digit for digit
			if err := dec.Decode(&ws.Settings); err != nil {
				return desired.Doc{}, fmt.Errorf("skill %s settings: %w", id, err)
			}
		}
		out.Skills[id] = ws
	}
	return out, nil
}

// judge ends the device's in-progress executions its report settles:
//
//   - install succeeded: applied_version ≥ the desired version the execution
//     started with and the skill is reported loaded at the rollout's version;
//     failed: it is reported failed or invalid at that version (reason: its
//     error), or the desired document no longer asks for that version;
//     installed but waiting for a requirement the device lacks (waiting,
//     with waiting_for) succeeded, with the reason "installed, waiting for
//     internet" (docs/rollouts.md);
//   - uninstall succeeded: applied_version ≥ that desired version and the
//     skill is absent (or no longer fleet-managed).
//
// A device that has not caught up yet is left alone; the engine times it out.
// The verdicts are written by runFinisher, batched (finisher.go).
func (c *Controller) judge(ctx context.Context, d *fleet.Device, doc fleet.Desired, rep state.Skills) error {
	execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{DeviceID: d.ID, States: []fleet.ExecState{fleet.ExecInProgress}})
	if err != nil {
		return err
	}
	for _, e := range execs {
		if c.finishPending(e) {
			continue // judged by an earlier pass; its verdict is being written
		}
		r, err := c.rolloutFor(ctx, e.RolloutID)
		if err != nil {
			return err
		}
		if to, reason, done := verdict(r, doc, rep, c.startVersion(e, doc)); done {
			if err := c.queueFinish(ctx, e, to, reason); err != nil { // written in a batch (finisher.go)
				return err
			}
		}
	}
	return nil
}

func verdict(r *fleet.Rollout, doc fleet.Desired, rep state.Skills, start int64) (fleet.ExecState, string, bool) {
	s, present := rep.Skill(r.SkillID)
	applied := rep.AppliedVersion >= start
	// A document older than the one the execution started with was read
	// before the execution's assignment landed: it cannot judge it.
	stale := doc.Version < start
	if r.Action == fleet.RolloutUninstall {
		if _, still := doc.Skills[r.SkillID]; still {
			if stale {
				return "", "", false
			}
			return fleet.ExecFailed, "the desired state still installs " + r.SkillID, true
		}
		return fleet.ExecSucceeded, "", applied && (!present || !s.Managed)
	}
	if want, ok := doc.Skills[r.SkillID]; !ok || want.Version != r.Version {
		if stale {
			return "", "", false
		}
		return fleet.ExecFailed, fmt.Sprintf("the desired state no longer installs %s %s", r.SkillID, r.Version), true
	}
	if !present || s.Version != r.Version || !applied {
		return "", "", false
	}
	switch s.State {
	case stateLoaded:
		return fleet.ExecSucceeded, "", true
	case stateWaiting:
		// docs/rollouts.md: installed and gated by a requirement the device
		// lacks now (internet, gui...) is OVOS's normal operation, not a
		// failure: the install succeeded, and the reason says what it waits
		// for. A skill not yet passed over (waiting for nothing) is judged
		// at a later report.
		if len(s.WaitingFor) == 0 {
			return "", "", false
		}
		return fleet.ExecSucceeded, truncate(fleet.ReasonInstalledWait+" "+strings.Join(s.WaitingFor, ", "), 1024), true
	case stateFailed, stateInvalid:
		reason := s.Error
		if reason == "" {
			reason = "skill " + string(s.State)
		}
		return fleet.ExecFailed, truncate(reason, 1024), true
	}
	return "", "", false
}

// startingVersion is startVer's mark of an execution the engine is starting
// (startExecutions): no document is new enough to judge it yet.
const startingVersion = math.MaxInt64

// startVersion is the desired version an execution started with in this
// run, or the current one (after a restart the controller does not know
// better, and the current document contains the change too).
func (c *Controller) startVersion(e *fleet.Execution, doc fleet.Desired) int64 {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	if v, ok := c.startVer[execKey{e.RolloutID, e.DeviceID}]; ok {
		return v
	}
	return doc.Version
}

// removed is the pass of a device not in the registry. RemoveDevice queues
// it after its own forget and clears, so it clears again only what a pass
// that loaded the device before the removal published and remembered
// afterwards (a desired document, a Home Assistant config): a plain removal
// sends its clear sequence once. An availability message that arrived
// after RemoveDevice's forget (a racing pass's repair, a retained "online"
// the presence check set aside for this pass, a Will) is cleared again too.
// Devices of LocalAccounts are not in the registry and are left alone.
func (c *Controller) removed(id string) {
	c.pubMu.Lock()
	_, desiredAgain := c.published[id]
	c.pubMu.Unlock()
	availAgain := false
	if t, err := topic.Availability(id); err == nil {
		_, availAgain = c.inbox.lastAvailability(t)
	}
	c.forget(id)
	if c.local[id] {
		return
	}
	if c.ha.has(id) {
		c.removeHA(id)
	}
	if availAgain {
		c.clearTopic(topic.Availability, id)
	}
	if desiredAgain {
		c.clearTopic(topic.Desired, id)
	}
}

// forget drops what the controller remembers of a removed device.
func (c *Controller) forget(id string) {
	c.pubMu.Lock()
	delete(c.published, id)
	delete(c.online, id)
	delete(c.waiting, id)
	for k := range c.startVer {
		if k.device == id {
			delete(c.startVer, k)
		}
	}
	c.pubMu.Unlock()
	c.queue.Forget(id)
	c.repairs.forget(id)
	c.live.forget(id)
	c.gw.forget(id)
	c.births.forget(id)
	if t, err := topic.Availability(id); err == nil {
		c.inbox.forgetAvailability(t)
	}
}
