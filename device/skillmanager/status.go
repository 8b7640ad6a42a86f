package skillmanager

import (
	"context"

	"github.com/chorus-edge/chorus/gateway/bus"
)

// handleStatus answers mycroft.skills.is_alive / is_ready / all_loaded with
// <type>.response {"status": bool} (SKILL_MANAGER §3): alive = alive or
// ready; ready = ready; both false while stopping.
func (m *Manager) handleStatus(_ context.Context, d bus.Delivery) {
	s := m.Status()
	ok := s.ready()
	if d.Message.Type == TypeIsAlive {
		ok = s.alive()
	}
	m.reply(d, map[string]any{"status": ok})
}

// handleSkillReady marks the load of data.skill_id ready (SKILL_MANAGER §2,
// ready: message). A ready for a skill not loading is ignored.
func (m *Manager) handleSkillReady(_ context.Context, d bus.Delivery) {
	id, _ := d.Message.Data["skill_id"].(string)
	if id == "" {
		m.log.Warn("malformed "+TypeSkillReady+": no data.skill_id", "device", d.Device)
		return
	}
	// Only the skill itself may say it is ready: the broker refuses a
	// skill's message whose context.skill_id names another skill, so
	// requiring it to name this one binds the claim to the sender
	// (docs/security.md, "Who may send what the agent acts on").
	if ctxID, _ := d.Message.Context["skill_id"].(string); ctxID != id {
		m.log.Warn(TypeSkillReady+" ignored: context.skill_id must name the skill that is ready", "skill_id", id, "context_skill_id", ctxID)
		return
	}
	m.mu.Lock()
	a := m.loading[id]
	m.mu.Unlock()
	if a != nil {
		a.markReady()
	}
}
