package skillmanager

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-edge/chorus/device/discovery"
)

// passResult is what one load pass did, per skill id.
type passResult struct {
	loaded  []string          // loaded by this pass, in discovery order; never nil
	failed  map[string]error  // loads this pass started that failed
	skipped map[string]string // why a skill was not loaded
}

// runPass is one load pass of SKILL_MANAGER §4: discover, then for each
// loadable skill in discovery order skip blacklisted, tracked, reserved,
// backing-off and gated ids, and load the rest. only, when non-nil,
// restricts the pass to those ids (activate). After a pass that loaded at
// least one skill it requests training without waiting for it.
//
// Passes may overlap (a scan, a connectivity event, a rescan): the
// reservation taken in reserve stops two of them loading one id twice.
func (m *Manager) runPass(ctx context.Context, why string, only map[string]bool) passResult {
	res := passResult{loaded: []string{}, failed: map[string]error{}, skipped: map[string]string{}}
	cat, err := discovery.Discover(m.cfg.Discovery)
	if err != nil {
		m.log.Warn("load pass: discovery failed; nothing loaded", "pass", why, "err", err)
		for id := range only {
			res.skipped[id] = "discovery failed: " + err.Error()
		}
		return res
	}
	black := toSet(m.cfg.Blacklist())
	m.mu.Lock()
	m.catalog = cat
	m.mu.Unlock()

	var loads []*load
	seen := map[string]bool{}
	// Before ready, a launcher waits for mycroft.ready, which comes after
	// this pass: such a load finishes on its own (ovos.go).
	ready := m.Status().ready()
	for _, s := range cat.Loadable() {
		if only != nil && !only[s.ID] {
			continue
		}
		seen[s.ID] = true
		if ctx.Err() != nil {
			res.skipped[s.ID] = "stopping"
			continue
		}
		a, reason, warn := m.reserve(s, black)
		if warn {
			m.log.Warn("skill is blacklisted; consider uninstalling it instead of blacklisting it", "skill", s.ID)
		}
		if a == nil {
			res.skipped[s.ID] = reason
			continue
		}
		a.deferred = a.ovos != nil && !ready
		loads = append(loads, m.begin(a))
	}
	for id := range only {
		if !seen[id] {
			res.skipped[id] = "not loadable"
		}
	}
	m.changed()
	for _, l := range loads {
		if l.a.deferred {
			continue
		}
		if err := <-l.done; err != nil {
			res.failed[l.a.skill.ID] = err
			continue
		}
		res.loaded = append(res.loaded, l.a.skill.ID)
	}
	if len(loads) > 0 {
		m.log.Info("load pass done", "pass", why, "loaded", res.loaded, "failed", len(res.failed))
	}
	if len(res.loaded) > 0 {
		m.requestTraining()
	}
	m.changed()
	return res
}

// reserve applies steps 1-4 of SKILL_MANAGER §4 to s and, when s may load,
// reserves its id and returns the attempt. Otherwise it returns why not;
// warn is true the first time a blacklisted id is skipped. A skill in the
// persisted inactive set is tracked as inactive instead of loaded.
func (m *Manager) reserve(s discovery.Skill, black map[string]bool) (a *attempt, reason string, warn bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := s.ID
	switch {
	case m.closed:
		return nil, "stopping", false
	case black[id]:
		warn = !m.warned[id]
		m.warned[id] = true
		return nil, "blacklisted", warn
	case m.tracked[id] != nil:
		return nil, "already tracked", false
	case m.loading[id] != nil:
		return nil, "already loading", false
	case m.inactive[id]:
		m.tracked[id] = &entry{skill: s, serial: m.nextSerialLocked()}
		return nil, "inactive", false
	case !m.retryDueLocked(id, s.Version):
		return nil, "backing off until " + m.failures[id].nextRetry().UTC().Format("2006-01-02T15:04:05Z"), false
	}
	if unmet := m.unmetLocked(s.Requirements); len(unmet) > 0 {
		return nil, "waiting for " + strings.Join(unmet, ", "), false
	}
	a = &attempt{skill: s, serial: m.nextSerialLocked(), ready: make(chan struct{})}
	if isOVOS(s) {
		a.ovos = &ovosLoad{failed: make(chan struct{})}
	}
	m.loading[id] = a
	return a, "", false
}

func toSet(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[strings.TrimSpace(id)] = true
	}
	return out
}

// errStopping ends loads interrupted by Close.
var errStopping = fmt.Errorf("skill manager stopping")
