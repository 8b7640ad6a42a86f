package controller

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/topic"
)

// typeInstallFailed is the agent installer's failure event
// ({"error", "detail", "skill_id"} on the device bus).
const typeInstallFailed = "ovos.skills.install.failed"

// subscribe follows the state topics of every device and the installer's
// failure events. The handlers only enqueue.
func (c *Controller) subscribe() error {
	for _, k := range []topic.Kind{topic.KindAvailability, topic.KindBirth, topic.KindConnectivity, topic.KindSkills} {
		isAvail := k == topic.KindAvailability
		f := topic.Root + "/" + topic.AnyDevice + "/" + k.String() // chorus/v1/+/<state>
		u, err := c.cfg.Broker.Subscribe(f, func(m broker.Message) { c.inbox.putState(m, isAvail) })
		if err != nil {
			return err
		}
		c.unsubs = append(c.unsubs, u)
	}
	f, err := topic.BusTypeFilter(topic.AnyDevice, typeInstallFailed)
	if err != nil {
		return err
	}
	u, err := c.cfg.Broker.Subscribe(f, c.inbox.putEvent)
	if err != nil {
		return err
	}
	c.unsubs = append(c.unsubs, u)
	return nil
}

// runInbox is the one goroutine that applies broker messages to the store.
func (c *Controller) runInbox() {
	for range c.inbox.wake {
		state, events, checks, dropped := c.inbox.take()
		if dropped > 0 {
			c.log.Warn("inbox full: bus events dropped", "dropped", dropped)
		}
		c.applyStates(c.ctx, state)
		for _, m := range events {
			c.applyInstallFailed(c.ctx, m)
		}
		for _, dev := range checks {
			c.checkPresence(c.ctx, dev)
		}
	}
}

// stateBatch is the most skills reports and connectivity payloads one
// store transaction writes (UpdateStates), so one batch holds the single
// writer for a bounded time, as finishBatch does for verdicts.
const stateBatch = 256

// pendingState is a state message waiting in a batch for the store.
type pendingState struct {
	m   broker.Message
	dev string
}

// applyStates stores state messages in the order take gave them and
// queues each stored device for reconcile. Skills reports and
// connectivity payloads, which only overwrite their own column, are
// written in batches of one transaction each instead of one transaction
// per report (one commit was a tenth of the gateway's CPU in a
// 10,000-device install, docs/benchmarks.md issue 19); an availability or
// birth message first writes the batch before it, so the store sees every
// message in take's order, as when each was written alone.
func (c *Controller) applyStates(ctx context.Context, msgs []broker.Message) {
	var (
		batch   []pendingState
		updates []fleet.StateUpdate
	)
	flush := func() {
		if len(batch) > 0 {
			c.storeStates(ctx, batch, updates)
			batch, updates = batch[:0], updates[:0]
		}
	}
	table := c.reportTable() // stateUpdate keeps only the applied version of what it parses
	defer c.putReportTable(table)
	for _, m := range msgs {
		t, err := topic.Parse(m.Topic)
		if err != nil || len(m.Payload) == 0 { // an empty payload clears a retained topic
			continue
		}
		dev := t.Device
		switch t.Kind {
		case topic.KindAvailability:
			flush()
			c.stateApplied(dev, m, c.applyAvailability(ctx, dev, m))
		case topic.KindBirth:
			flush()
			c.stateApplied(dev, m, c.applyBirth(ctx, dev, m.Payload))
		case topic.KindConnectivity, topic.KindSkills:
			u, err := stateUpdate(table, dev, t.Kind, m.Payload)
			if err != nil {
				c.stateApplied(dev, m, err)
				continue
			}
			batch, updates = append(batch, pendingState{m: m, dev: dev}), append(updates, u)
			if len(batch) == stateBatch {
				flush()
			}
		}
	}
	flush()
}

// stateUpdate parses a skills report or connectivity payload into what the
// store writes; a payload that does not parse is EINVALID.
func stateUpdate(table *reportTable, dev string, k topic.Kind, payload []byte) (fleet.StateUpdate, error) {
	if k == topic.KindConnectivity {
		return fleet.StateUpdate{DeviceID: dev, Payload: payload}, parseConnectivity(payload)
	}
	// The engine is not woken here: the reconcile this queues judges the
	// report, and an execution it ends wakes the engine (finish).
	r, err := table.parse(payload)
	return fleet.StateUpdate{DeviceID: dev, Reported: true, Payload: payload, AppliedVersion: r.AppliedVersion}, err
}

// storeStates writes one batch in one transaction. When the store refuses
// the transaction as a whole (nothing of it is written), each message is
// written alone, so each has the outcome it had before batching: one
// refused message does not cost the others, and none is dropped because
// another failed.
func (c *Controller) storeStates(ctx context.Context, batch []pendingState, updates []fleet.StateUpdate) {
	errs, err := c.store.UpdateStates(ctx, updates)
	if err != nil && len(updates) > 1 && ctx.Err() == nil {
		c.log.Debug("state batch refused; storing each alone", "messages", len(updates), "error", err)
		for i := range updates {
			c.storeStates(ctx, batch[i:i+1], updates[i:i+1])
		}
		return
	}
	for i, p := range batch {
		if err == nil {
			c.stateApplied(p.dev, p.m, errs[i])
		} else {
			c.stateApplied(p.dev, p.m, err)
		}
	}
}

// stateApplied finishes one state message the store took (err nil) or
// refused: a stored one queues its device's reconcile.
func (c *Controller) stateApplied(dev string, m broker.Message, err error) {
	switch {
	case fleet.ErrorCode(err) == fleet.ENOTFOUND:
		c.clearStale(dev, m)
		return
	case err != nil && c.ctx.Err() != nil:
		// Stopping: the store call was canceled, not refused (no WARN on a
		// clean stop, issue 16 §8).
		c.log.Debug("device state not stored: the controller is stopping", "topic", m.Topic, "error", err)
		return
	case err != nil:
		c.log.Warn("device state refused", "topic", m.Topic, "error", err)
		return
	}
	c.queue.Add(dev)
	c.changed("device/" + dev)
}

func (c *Controller) applyAvailability(ctx context.Context, dev string, m broker.Message) error {
	if isRepublish(m) {
		// The controller's own repair: Reconcile compares it, it is not the
		// device's word. One of a removed device (a pass that loaded the
		// device before its removal published it after clearTopics) is
		// cleared like any stale state: ENOTFOUND.
		_, err := c.store.GetDevice(ctx, dev)
		return err
	}
	online, err := parseAvailability(m.Payload)
	if err != nil {
		return err
	}
	p := fleet.Presence{Online: online, Session: sessionOf(m), At: c.cfg.Now()}
	if c.live.on() {
		if skip := c.judgeLive(dev, p); skip {
			return nil
		}
		p.Force = true
		// An offline of a connection that is gone (its Will, 5 s later):
		// the device was last heard when the connection closed.
		if t := c.live.lostAt(dev); !p.Online && !t.IsZero() && !c.live.connected(dev) {
			p.At = t
		}
	}
	applied, err := c.store.UpdatePresence(ctx, dev, p)
	if err == nil && !applied {
		c.log.Debug("stale availability ignored", "device", dev, "session", p.Session)
	}
	if err == nil && applied {
		c.repairs.applied(dev, p)
	}
	if err == nil && applied && c.setOnline(dev, p.Online) {
		c.Kick() // a device with queued executions came online: they may start
	}
	return err
}

// judgeLive decides a device's own availability message with presence tied
// to live connections (liveness.go); skip means it is not applied.
func (c *Controller) judgeLive(dev string, p fleet.Presence) (skip bool) {
	live := c.live.connected(dev)
	cur, known := c.repairs.presenceOf(dev)
	switch {
	case p.Online && !live:
		// The retained "online" of a connection that is gone (a gateway
		// restart): the grace check marks the device offline unless it
		// reconnects. Not a sign of life: LAST SEEN stays.
		c.log.Debug("online of a connection that is gone ignored", "device", dev, "session", p.Session)
		c.queue.Add(dev)
		return true
	case !p.Online && live && !(known && cur.Session == p.Session):
		c.log.Info("late offline ignored: the device holds a live connection", "device", dev, "session", p.Session)
		c.queue.Add(dev) // availability restates the live presence (lateWill)
		return true
	}
	return false
}

func (c *Controller) applyBirth(ctx context.Context, dev string, payload []byte) error {
	b, err := parseBirth(payload)
	if err != nil {
		return err
	}
	info := BirthInfo{Hostname: b.Hostname, Arch: b.Arch, Isolation: b.Isolation, Websocket: b.Websocket}
	force := false
	if c.live.on() {
		if !c.live.connected(dev) {
			// The retained birth of a connection that is gone (a gateway
			// restart): its details, but not a sign of life (LAST SEEN).
			if _, err := c.store.GetDevice(ctx, dev); err != nil {
				return err
			}
			c.births.setIfAbsent(dev, info)
			return nil
		}
		force = true // the live connection's birth, whatever its session
	}
	applied, err := c.store.UpdateBirth(ctx, dev, fleet.Birth{Session: b.Session, AgentVersion: b.AgentVersion, At: c.cfg.Now(), Force: force})
	if err == nil && applied {
		c.births.set(dev, info)
	}
	return err
}

// clearStale clears a retained state topic of a device that is not in the
// registry (removed, possibly while the controller was down, or whose Will
// fired after its topics were cleared). Devices of LocalAccounts are left alone.
func (c *Controller) clearStale(dev string, m broker.Message) {
	if c.local[dev] || !m.Retain {
		return
	}
	if err := c.cfg.Broker.Publish(broker.Message{Topic: m.Topic, QoS: 1, Retain: true}); err != nil {
		c.log.Warn("clear retained topic", "topic", m.Topic, "error", err)
	}
}

// installFailed is the data of the installer's failure event.
type installFailed struct {
	Data struct {
		Error   string `json:"error"`
		Detail  string `json:"detail"`
		SkillID string `json:"skill_id"`
	} `json:"data"`
}

// applyInstallFailed fails the device's in-progress install executions of
// the skill the agent could not install (a tampered or truncated artifact
// never reaches the skills topic, so this is how it ends before the timeout).
func (c *Controller) applyInstallFailed(ctx context.Context, m broker.Message) {
	t, err := topic.Parse(m.Topic)
	if err != nil {
		return
	}
	var ev installFailed
	if json.Unmarshal(m.Payload, &ev) != nil || ev.Data.SkillID == "" {
		return
	}
	execs, err := c.store.ListExecutions(ctx, fleet.ExecutionFilter{DeviceID: t.Device, States: []fleet.ExecState{fleet.ExecInProgress}})
	if err != nil {
		return
	}
	for _, e := range execs {
		r, err := c.rolloutFor(ctx, e.RolloutID)
		if err != nil || r.Action != fleet.RolloutInstall || r.SkillID != ev.Data.SkillID {
			continue
		}
		reason := strings.TrimSpace(ev.Data.Error + ": " + ev.Data.Detail)
		c.finish(ctx, e, fleet.ExecFailed, truncate(reason, 1024))
	}
}

// finish ends an execution and tells the engine.
func (c *Controller) finish(ctx context.Context, e *fleet.Execution, to fleet.ExecState, reason string) {
	if _, err := c.store.TransitionExecution(ctx, e.RolloutID, e.DeviceID, to, reason); err != nil {
		c.log.Debug("execution transition refused", "rollout", e.RolloutID, "device", e.DeviceID, "to", to, "error", err)
		return
	}
	c.pubMu.Lock()
	delete(c.startVer, execKey{e.RolloutID, e.DeviceID})
	c.pubMu.Unlock()
	c.log.Info("execution ended", "rollout", e.RolloutID, "device", e.DeviceID, "state", to, "reason", reason)
	c.changed(rolloutSubject(e.RolloutID))
	c.Kick()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
