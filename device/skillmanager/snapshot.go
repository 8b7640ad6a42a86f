package skillmanager

import (
	"sort"
	"time"

	"github.com/chorus-edge/chorus/device/discovery"
	"github.com/chorus-edge/chorus/gateway/state"
)

// Snapshot is the manager's reported state: the payloads of the retained
// skills and connectivity topics (ARCHITECTURE §3) and the manager status.
type Snapshot struct {
	Status       Status
	Skills       SkillsReport
	Connectivity ConnectivityReport
}

// SkillsReport is the payload of chorus/v1/<device>/skills (gateway/state).
// AppliedVersion belongs to the installer: the manager leaves it 0 and the
// agent sets it.
type SkillsReport = state.Skills

// SkillReport is one skill in the skills topic (SKILL_MANAGER §3).
type SkillReport = state.Skill

// Snapshot returns the current state. Skills are listed in discovery order
// (the last successful discovery), then skills the manager still runs that
// discovery no longer lists, by id. since is when the manager first
// reported a skill in its current state.
func (m *Manager) Snapshot() Snapshot {
	black := toSet(m.cfg.Blacklist()) // config read outside the lock
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UTC()
	var skills []SkillReport
	seen := map[string]bool{}
	for _, s := range m.catalog.Entries() {
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		skills = append(skills, m.reportLocked(s, black, now))
	}
	var extra []string
	for id := range m.tracked {
		if !seen[id] {
			extra = append(extra, id)
		}
	}
	for id := range m.loading {
		if !seen[id] && m.tracked[id] == nil {
			extra = append(extra, id)
		}
	}
	sort.Strings(extra)
	for _, id := range extra {
		s := discovery.Skill{ID: id, Valid: true}
		if e := m.tracked[id]; e != nil {
			s = e.skill
		} else if a := m.loading[id]; a != nil {
			s = a.skill
		}
		skills = append(skills, m.reportLocked(s, black, now))
	}
	for id := range m.since {
		if !seen[id] && m.tracked[id] == nil && m.loading[id] == nil {
			delete(m.since, id)
		}
	}
	if skills == nil {
		skills = []SkillReport{}
	}
	return Snapshot{
		Status: m.status,
		Skills: SkillsReport{ManifestDigest: m.catalog.Digest(), UpdatedAt: now, Skills: skills,
			Training: m.training},
		Connectivity: m.connectivityLocked(),
	}
}

// reportLocked derives the reported state of s (a catalog entry, or the
// skill a tracked entry or a load holds), in this order: tracked (loaded or
// inactive), loading, invalid, blacklisted, inactive, failed (same
// version), waiting.
func (m *Manager) reportLocked(s discovery.Skill, black map[string]bool, now time.Time) SkillReport {
	r := SkillReport{ID: s.ID, Version: s.Version, Requirements: nonNil(s.Requirements), WaitingFor: []string{}}
	e, a, f := m.tracked[s.ID], m.loading[s.ID], m.failures[s.ID]
	switch {
	case e != nil && e.active && e.proc != nil:
		r.Version, r.Requirements = e.skill.Version, nonNil(e.skill.Requirements)
		r.State, r.Active = StateLoaded, true
		r.Degraded = len(m.unmetLocked(e.skill.Requirements)) > 0
	case e != nil:
		r.State = StateInactive
	case a != nil:
		r.Version, r.State = a.skill.Version, StateLoading
	case !s.Valid:
		r.State, r.Error = StateInvalid, s.Invalid
	case black[s.ID]:
		r.State = StateBlacklisted
	case m.inactive[s.ID]:
		r.State = StateInactive
	case f != nil && f.version == s.Version:
		next := f.nextRetry().UTC()
		r.State, r.Error, r.Attempts, r.NextRetry = StateFailed, f.err, f.attempts, &next
		r.Output = f.output
	default:
		r.State, r.WaitingFor = StateWaiting, m.unmetLocked(s.Requirements)
	}
	mark, ok := m.since[s.ID]
	if !ok || mark.state != r.State {
		mark = stateMark{state: r.State, since: now}
		m.since[s.ID] = mark
	}
	r.Since = mark.since
	return r
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return append([]string{}, s...)
}
