package skillmanager

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// errUnknownSkill is the [ours] reply to activate/deactivate of an id the
// manager has never seen (SKILL_MANAGER §7).
var errUnknownSkill = errors.New("unknown skill")

// skillArg reads data.skill; a missing or non-string value is malformed.
func skillArg(d bus.Delivery) (string, error) {
	id, ok := d.Message.Data["skill"].(string)
	if !ok || strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("malformed %s: data.skill must be a non-empty string", d.Message.Type)
	}
	return strings.TrimSpace(id), nil
}

// handleList broadcasts mycroft.skills.list {id: {"active", "id"}} (a new
// message, not a response, as OVOS does) and [ours] also replies
// skillmanager.list.response with the same data. Listed are the skills the
// manager holds: loaded, inactive, loading and failed; active means loaded
// and not deactivated (ovos-behaviour §1.10).
func (m *Manager) handleList(_ context.Context, d bus.Delivery) {
	data := map[string]any{}
	m.mu.Lock()
	for id := range m.failures {
		data[id] = map[string]any{"active": false, "id": id}
	}
	for id := range m.loading {
		data[id] = map[string]any{"active": false, "id": id}
	}
	for id, e := range m.tracked {
		data[id] = map[string]any{"active": e.active && e.proc != nil, "id": id}
	}
	m.mu.Unlock()
	m.emit(TypeSkillsList, data)
	m.reply(d, data)
}

// handleActivate restarts each matching inactive skill ("all" matches every
// one) and replies skillmanager.activate.response per skill: {} when it
// loaded (or waits for a requirement), {"error": "failed: ..."} when its
// load failed. An id that is known and not inactive is answered {} (nothing
// to do); an unknown id {"error": "unknown skill"} [ours]; "all" with
// nothing inactive sends nothing.
func (m *Manager) handleActivate(_ context.Context, d bus.Delivery) {
	id, err := skillArg(d)
	if err != nil {
		m.log.Warn(err.Error())
		m.reply(d, map[string]any{"error": err.Error()})
		return
	}
	if err := m.goRequest(func(ctx context.Context) { m.activate(ctx, d, id) }); err != nil {
		m.reply(d, map[string]any{"error": err.Error()})
	}
}

func (m *Manager) activate(ctx context.Context, d bus.Delivery, id string) {
	targets, known := m.takeActivations(id)
	if !known {
		m.reply(d, map[string]any{"error": errUnknownSkill.Error()})
		return
	}
	if len(targets) == 0 {
		if id != "all" {
			m.reply(d, map[string]any{})
		}
		return
	}
	m.persistInactive()
	m.changed()
	only := map[string]bool{}
	for _, t := range targets {
		only[t] = true
	}
	res := m.runPass(ctx, TypeActivate, only)
	for _, t := range targets {
		if err := activationError(t, res); err != nil {
			m.log.Warn("activate", "skill", t, "err", err)
			m.reply(d, map[string]any{"error": "failed: " + err.Error()})
			continue
		}
		m.log.Info("skill activated", "skill", t)
		m.reply(d, map[string]any{})
	}
}

// activationError says why activating id did not work; waiting for a
// requirement is not an error (the skill loads when it is met).
func activationError(id string, res passResult) error {
	if err := res.failed[id]; err != nil {
		return err
	}
	switch reason := res.skipped[id]; {
	case reason == "blacklisted", reason == "not loadable", reason == "stopping",
		strings.HasPrefix(reason, "discovery failed"):
		return errors.New(reason)
	}
	return nil
}

// takeActivations takes the inactive skills matching id out of the
// inactive set and the table (with their backoff: an explicit activate
// retries now). known is false for an id the manager has never seen.
func (m *Manager) takeActivations(id string) (targets []string, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	match := func(x string) bool { return id == "all" || x == id }
	for x, e := range m.tracked {
		if match(x) && !e.active {
			targets = append(targets, x)
		}
	}
	for x := range m.inactive {
		if match(x) && m.tracked[x] == nil {
			targets = append(targets, x)
		}
	}
	for _, x := range targets {
		delete(m.inactive, x)
		delete(m.tracked, x) // inactive entries hold no process
		delete(m.failures, x)
	}
	sort.Strings(targets)
	return targets, id == "all" || len(targets) > 0 || m.knownLocked(id)
}

// knownLocked reports whether id is a skill the manager has seen.
func (m *Manager) knownLocked(id string) bool {
	if m.tracked[id] != nil || m.loading[id] != nil || m.failures[id] != nil || m.inactive[id] {
		return true
	}
	_, ok := m.catalog.Get(id)
	return ok
}

// handleDeactivate stops the skill and keeps it tracked as inactive, so no
// pass reloads it; the inactive set is persisted (SKILL_MANAGER §7).
// Replies skillmanager.deactivate.response {} or {"error": ...}.
func (m *Manager) handleDeactivate(_ context.Context, d bus.Delivery) {
	id, err := skillArg(d)
	if err != nil {
		m.log.Warn(err.Error())
		m.reply(d, map[string]any{"error": err.Error()})
		return
	}
	if err := m.goRequest(func(ctx context.Context) {
		if err := m.deactivate(ctx, id); err != nil {
			m.reply(d, map[string]any{"error": err.Error()})
			return
		}
		m.reply(d, map[string]any{})
	}); err != nil {
		m.reply(d, map[string]any{"error": err.Error()})
	}
}

// deactivate marks id inactive (persisted) and stops its process if it has
// one. A load in flight is stopped on its way out and tracked inactive.
func (m *Manager) deactivate(ctx context.Context, id string) error {
	proc, err := m.takeDeactivation(id)
	if err != nil {
		return err
	}
	m.persistInactive()
	if proc != nil {
		_ = m.stopAndDetach(ctx, id, proc) // logged
	}
	m.log.Info("skill deactivated", "skill", id)
	m.changed()
	return nil
}

func (m *Manager) takeDeactivation(id string) (Process, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.knownLocked(id) {
		return nil, errUnknownSkill
	}
	m.inactive[id] = true
	if e := m.tracked[id]; e != nil {
		proc := e.proc
		e.proc, e.active = nil, false // the exit watcher now knows the stop is ours
		return proc, nil
	}
	if a := m.loading[id]; a != nil {
		a.deactivated = true
		return nil, nil
	}
	s, ok := m.catalog.Get(id)
	if !ok {
		s = discovery.Skill{ID: id}
	}
	m.tracked[id] = &entry{skill: s, serial: m.nextSerialLocked()}
	return nil, nil
}

// handleKeep deactivates every other skill the manager knows (loaded,
// loading, failed, waiting); no reply (ovos-behaviour §1.10).
func (m *Manager) handleKeep(_ context.Context, d bus.Delivery) {
	keep, err := skillArg(d)
	if err != nil {
		m.log.Warn(err.Error())
		return
	}
	if err := m.goRequest(func(ctx context.Context) {
		for _, id := range m.othersThan(keep) {
			_ = m.deactivate(ctx, id) // known by construction
		}
	}); err != nil {
		m.log.Warn("skillmanager.keep not handled", "skill", keep, "err", err)
	}
}

func (m *Manager) othersThan(keep string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := map[string]bool{}
	for id, e := range m.tracked {
		if e.active {
			set[id] = true
		}
	}
	for id := range m.loading {
		set[id] = true
	}
	for id := range m.failures {
		set[id] = true
	}
	for _, s := range m.catalog.Loadable() {
		if !m.inactive[s.ID] {
			set[s.ID] = true
		}
	}
	delete(set, keep)
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}
