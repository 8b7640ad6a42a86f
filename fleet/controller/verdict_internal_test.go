package controller

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// An install the device reports waiting for a requirement it lacks is
// installed: succeeded with what it waits for (docs/rollouts.md). Waiting
// for nothing yet is not judged.
func TestVerdictWaitingSkill(t *testing.T) {
	t.Parallel()
	r := &fleet.Rollout{SkillID: "weather.chorus", Version: "1.0.0", Action: fleet.RolloutInstall}
	doc := fleet.Desired{Version: 4, Skills: map[string]fleet.DesiredSkill{"weather.chorus": {Version: "1.0.0"}}}
	report := func(s state.Skill) state.Skills {
		s.ID, s.Version, s.Managed = "weather.chorus", "1.0.0", true
		return state.Skills{AppliedVersion: 4, Skills: []state.Skill{s}}
	}
	tests := []struct {
		name   string
		rep    state.Skills
		to     fleet.ExecState
		reason string
		done   bool
	}{
		{"waiting for internet", report(state.Skill{State: state.Waiting, WaitingFor: []string{"internet"}}),
			fleet.ExecSucceeded, "installed, waiting for internet", true},
		{"waiting for two", report(state.Skill{State: state.Waiting, WaitingFor: []string{"internet", "gui"}}),
			fleet.ExecSucceeded, "installed, waiting for internet, gui", true},
		{"not yet passed over", report(state.Skill{State: state.Waiting}), "", "", false},
		{"older document applied", state.Skills{AppliedVersion: 3, Skills: report(state.Skill{State: state.Waiting,
			WaitingFor: []string{"internet"}}).Skills}, "", "", false},
		{"loaded", report(state.Skill{State: state.Loaded}), fleet.ExecSucceeded, "", true},
	}
	for _, tt := range tests {
		to, reason, done := verdict(r, doc, tt.rep, 4)
		if to != tt.to || reason != tt.reason || done != tt.done {
			t.Errorf("%s: verdict = %q %q %v, want %q %q %v", tt.name, to, reason, done, tt.to, tt.reason, tt.done)
		}
	}
}
