package skillmanager

import (
	"context"
	"strings"
	"sync"

	"github.com/chorus-edge/chorus/configs"
)

// TypeReady is OVOS's "the device is ready for the user" event. ovos-core
// emitted it once its ready_settings were met (ovos-core skill_manager.py
// handle_check_device_readiness, before ovos-core PR #554); today the
// finished-booting skill does (ovos-skill-boot-finished __init__.py
// handle_check_device_readiness). ovos-workshop's ovos-skill-launcher loads
// its skill on it when mycroft.skills.is_ready answered false
// (skill_launcher.py SkillContainer._connect_to_core), and reloads an
// already loaded skill on every later one (SkillContainer.load_skill), so
// the manager emits it exactly once per run.
const TypeReady = "mycroft.ready"

// DefaultReadySettings is ready_settings when the config sets none
// (ovos-core's default, ["skills"]; the words are configs.Ready*).
var DefaultReadySettings = []string{configs.ReadySkills}

// readyGate wakes the ready announcer whenever the manager's state changes.
type readyGate struct {
	mu   sync.Mutex
	tick chan struct{} // closed and replaced on every change
	sent bool          // mycroft.ready went out (once per run)
}

func (g *readyGate) wait() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tick == nil {
		g.tick = make(chan struct{})
	}
	return g.tick
}

func (g *readyGate) poke() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tick != nil {
		close(g.tick)
		g.tick = nil
	}
}

// announceReady emits mycroft.ready once every ready_settings entry is met,
// re-checking on every state change until then (ctx ends the wait). Its
// shape is OVOS's: no data, and a context holding only the session, which
// ovos-bus-client's MessageBusClient.emit adds to a message that has none
// (ovos-skill-boot-finished emits Message('mycroft.ready')).
func (m *Manager) announceReady(ctx context.Context) {
	for {
		tick := m.ready.wait()
		missing := m.readyMissing()
		if len(missing) == 0 {
			break
		}
		m.log.Debug("waiting for ready_settings", "missing", missing)
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
	m.ready.mu.Lock()
	sent := m.ready.sent
	m.ready.sent = true
	m.ready.mu.Unlock()
	if sent {
		return
	}
	m.log.Info("ready_settings met: emitting "+TypeReady, "ready_settings", m.cfg.ReadySettings)
	m.emitCtx(TypeReady, map[string]any{}, map[string]any{"session": map[string]any{"session_id": "default"}})
}

// ReadySent reports whether mycroft.ready has been emitted.
func (m *Manager) ReadySent() bool {
	m.ready.mu.Lock()
	defer m.ready.mu.Unlock()
	return m.ready.sent
}

// readyMissing lists the ready_settings entries not met right now.
func (m *Manager) readyMissing() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, s := range m.cfg.ReadySettings {
		if !m.readyMetLocked(strings.TrimSpace(s)) {
			out = append(out, s)
		}
	}
	return out
}

func (m *Manager) readyMetLocked(s string) bool {
	switch s {
	case configs.ReadySkills:
		return m.status == StatusReady
	case configs.ReadyNetworkSkills, configs.ReadyNetwork:
		return m.conn.network
	case configs.ReadyInternetSkills, configs.ReadyInternet:
		return m.conn.internet
	}
	if cs, ok := m.catalog.Get(s); ok && isOVOS(cs) {
		// Its launcher loads only on mycroft.ready: waiting for it would
		// never end (docs/ovos.md).
		return true
	}
	e := m.tracked[s]
	return e != nil && e.proc != nil && e.active
}
