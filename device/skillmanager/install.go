package skillmanager

import (
	"context"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// handleInstallComplete reacts to ovos.skills.install.complete and
// ovos.pip.install.complete (SKILL_MANAGER §6): when ready, restart every
// loaded skill whose installed version changed, then run a load pass (which
// loads the new versions and anything newly installed). Before ready it
// does nothing: the startup load will see the skill.
func (m *Manager) handleInstallComplete(_ context.Context, d bus.Delivery) {
	if !m.Status().ready() {
		m.log.Info("install reported before ready; the startup load will see it", "type", d.Message.Type)
		return
	}
	m.installs.fire(d.Message.Type)
}

// restartUpgraded stops every loaded skill whose discovered version differs
// from the one it was loaded with, and forgets it (and its backoff: a new
// version clears it), so the next pass loads the new version. The
// entries are taken under the lock and stopped outside it, as in §6.
// "Cannot tell" restarts nothing.
func (m *Manager) restartUpgraded(ctx context.Context) {
	cat, err := discovery.Discover(m.cfg.Discovery)
	if err != nil {
		m.log.Warn("install: discovery failed; no skill restarted", "err", err)
		return
	}
	type victim struct {
		id, from, to string
		proc         Process
	}
	var victims []victim
	m.mu.Lock()
	for id, e := range m.tracked {
		s, ok := cat.Get(id)
		if !ok || !s.Valid || s.Version == e.skill.Version || e.proc == nil {
			continue
		}
		victims = append(victims, victim{id, e.skill.Version, s.Version, e.proc})
		e.proc, e.active = nil, false
		delete(m.tracked, id)
		delete(m.failures, id)
	}
	m.mu.Unlock()
	for _, v := range victims {
		m.log.Info("installed version changed; restarting", "skill", v.id, "from", v.from, "to", v.to)
		_ = m.stopAndDetach(ctx, v.id, v.proc) // logged
	}
	if len(victims) > 0 {
		m.changed()
	}
}

// handleRescan runs a pass and replies skillmanager.rescan.response
// {"loaded": [ids loaded by that pass]}; before ready it replies an empty
// list without a pass (SKILL_MANAGER §6).
func (m *Manager) handleRescan(_ context.Context, d bus.Delivery) {
	if !m.Status().ready() {
		m.reply(d, map[string]any{"loaded": []string{}})
		return
	}
	if err := m.goRequest(func(ctx context.Context) {
		res := m.runPass(ctx, TypeRescan, nil)
		m.reply(d, map[string]any{"loaded": res.loaded})
	}); err != nil {
		m.reply(d, map[string]any{"loaded": []string{}, "error": err.Error()})
	}
}
