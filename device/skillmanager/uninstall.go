package skillmanager

import (
	"context"
	"sort"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/bus"
)

// handleUninstallComplete reacts to ovos.skills.uninstall.complete and
// ovos.pip.uninstall.complete: unload every tracked skill that is gone.
func (m *Manager) handleUninstallComplete(_ context.Context, d bus.Delivery) {
	m.uninstalls.fire(d.Message.Type)
}

// unloadGone is SKILL_MANAGER §6 / seeds/000 "Unloading After an
// Uninstall", exactly:
//   - discoverable = discovery's loadable skills; declared = directories
//     still holding a SKILL.md (discovery.Declared); a skill is gone only
//     when it is neither, so a broken but present skill stays loaded;
//   - discovery or Declared failing is "cannot tell": nothing is unloaded
//     and nothing cleared;
//   - nothing discoverable but something declared: keep every skill, warn;
//     never decide by counting;
//   - the removal list and the processes behind it are taken under one
//     lock and stopped outside it, so a replacement that an overlapping
//     pass loads for the same id is never the one stopped;
//   - a load in flight for a gone id gets the verdict on its attempt: it
//     stops the process on the way out, is never tracked and never
//     announced; the next reservation of that id is a new attempt, so a
//     reinstall loads normally;
//   - the id is dropped from the retry bookkeeping, the blacklist warning
//     and the persisted inactive set [ours: an uninstall forgets the skill;
//     deactivate only silences one].
func (m *Manager) unloadGone(ctx context.Context) {
	before := m.serials()
	cat, err := discovery.Discover(m.cfg.Discovery)
	if err != nil {
		m.log.Warn("uninstall: discovery cannot tell; nothing unloaded", "err", err)
		return
	}
	declared, err := discovery.Declared(m.cfg.Discovery)
	if err != nil {
		m.log.Warn("uninstall: declared skills cannot be read; nothing unloaded", "err", err)
		return
	}
	discoverable := map[string]bool{}
	for _, s := range cat.Loadable() {
		discoverable[s.ID] = true
	}
	if len(discoverable) == 0 && len(declared) > 0 {
		m.log.Warn("uninstall: no skill is loadable but skill directories are still declared; keeping every skill",
			"declared", len(declared))
		return
	}
	gone := func(id string) bool { _, ok := declared[id]; return !discoverable[id] && !ok }

	victims, verdicts, dropInactive := m.takeGone(gone, before)
	if dropInactive {
		m.persistInactive()
	}
	for _, id := range verdicts {
		m.log.Info("uninstall: skill gone while loading; its load will be abandoned", "skill", id)
	}
	for _, v := range victims {
		m.log.Info("uninstall: unloading skill that is gone", "skill", v.skill.ID)
		if v.proc != nil {
			_ = m.stopAndDetach(ctx, v.skill.ID, v.proc) // logged
		}
	}
	m.mu.Lock()
	m.catalog = cat // the report lists what is on disk now, not until the next scan
	m.mu.Unlock()
	m.changed()
}

// serials records which entries and attempts exist before the uninstall
// looks at the disk (CORE-C's per-attempt serials): one created later came
// from a pass that saw the disk after us (a reinstall) and is not ours to
// judge.
func (m *Manager) serials() map[uint64]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[uint64]bool, len(m.tracked)+len(m.loading))
	for _, e := range m.tracked {
		out[e.serial] = true
	}
	for _, a := range m.loading {
		out[a.serial] = true
	}
	return out
}

// takeGone removes every tracked entry for which gone is true and records
// the verdict on loads in flight, all under one lock; only entries and
// attempts in before are judged. It returns the removed entries with the
// process each held at that moment.
func (m *Manager) takeGone(gone func(string) bool, before map[uint64]bool) (victims []removed, verdicts []string, dropInactive bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, e := range m.tracked {
		if gone(id) && before[e.serial] {
			victims = append(victims, removed{skill: e.skill, proc: e.proc})
			e.proc, e.active = nil, false // the exit watcher now knows the stop is ours
			delete(m.tracked, id)
		}
	}
	for id, a := range m.loading {
		if gone(id) && before[a.serial] {
			a.gone = true
			verdicts = append(verdicts, id)
		}
	}
	for id := range m.warned {
		if gone(id) {
			delete(m.warned, id)
		}
	}
	for id := range m.inactive {
		if gone(id) {
			delete(m.inactive, id)
			dropInactive = true
		}
	}
	for id := range m.failures {
		if gone(id) {
			delete(m.failures, id)
		}
	}
	sort.Slice(victims, func(i, j int) bool { return victims[i].skill.ID < victims[j].skill.ID })
	return victims, verdicts, dropInactive
}

// removed is an entry taken out of the table, with the process it held.
type removed struct {
	skill discovery.Skill
	proc  Process
}
