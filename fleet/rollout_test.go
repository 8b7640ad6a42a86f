package fleet_test

import (
	"testing"

	"github.com/chorus-edge/chorus/fleet"
)

func TestExecStateMachine(t *testing.T) {
	all := []fleet.ExecState{fleet.ExecQueued, fleet.ExecInProgress, fleet.ExecSucceeded,
		fleet.ExecFailed, fleet.ExecTimedOut, fleet.ExecCanceled}
	legal := map[[2]fleet.ExecState]bool{
		{fleet.ExecQueued, fleet.ExecInProgress}:    true,
		{fleet.ExecQueued, fleet.ExecFailed}:        true,
		{fleet.ExecQueued, fleet.ExecCanceled}:      true,
		{fleet.ExecInProgress, fleet.ExecQueued}:    true,
		{fleet.ExecInProgress, fleet.ExecSucceeded}: true,
		{fleet.ExecInProgress, fleet.ExecFailed}:    true,
		{fleet.ExecInProgress, fleet.ExecTimedOut}:  true,
		{fleet.ExecInProgress, fleet.ExecCanceled}:  true,
	}
	for _, from := range all {
		for _, to := range all {
			want := legal[[2]fleet.ExecState{from, to}]
			t.Run(string(from)+"->"+string(to), func(t *testing.T) {
				if got := from.CanTransition(to); got != want {
					t.Errorf("CanTransition = %v, want %v", got, want)
				}
			})
		}
		if got, want := from.Terminal(), from != fleet.ExecQueued && from != fleet.ExecInProgress; got != want {
			t.Errorf("%s.Terminal() = %v, want %v", from, got, want)
		}
	}
	if fleet.ExecState("bogus").Terminal() || fleet.ExecQueued.CanTransition("bogus") {
		t.Error("unknown states must be neither terminal nor reachable")
	}
}

func TestRolloutStateMachine(t *testing.T) {
	tests := []struct {
		from, to fleet.RolloutState
		want     bool
	}{
		{fleet.RolloutQueued, fleet.RolloutInProgress, true},
		{fleet.RolloutQueued, fleet.RolloutSucceeded, false},
		{fleet.RolloutInProgress, fleet.RolloutPaused, true},
		{fleet.RolloutPaused, fleet.RolloutInProgress, true},
		{fleet.RolloutPaused, fleet.RolloutSucceeded, false},
		{fleet.RolloutInProgress, fleet.RolloutAborted, true},
		{fleet.RolloutInProgress, fleet.RolloutFailed, true},
		{fleet.RolloutSucceeded, fleet.RolloutInProgress, false},
		{fleet.RolloutAborted, fleet.RolloutInProgress, false},
		{fleet.RolloutCanceled, fleet.RolloutCanceled, false},
		{fleet.RolloutInProgress, fleet.RolloutInProgress, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.from)+"->"+string(tt.to), func(t *testing.T) {
			if got := tt.from.CanTransition(tt.to); got != tt.want {
				t.Errorf("CanTransition = %v, want %v", got, tt.want)
			}
		})
	}
	for _, s := range []fleet.RolloutState{fleet.RolloutSucceeded, fleet.RolloutFailed, fleet.RolloutAborted, fleet.RolloutCanceled} {
		if !s.Terminal() {
			t.Errorf("%s.Terminal() = false", s)
		}
	}
}

func TestRolloutValidate(t *testing.T) {
	tests := []struct {
		name string
		r    fleet.Rollout
		ok   bool
	}{
		{"install", fleet.Rollout{SkillID: "s", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.AllTarget()}}, true},
		{"uninstall", fleet.Rollout{SkillID: "s", Action: fleet.RolloutUninstall, Targets: []fleet.Target{fleet.TagTarget("k")}}, true},
		{"uninstall with version", fleet.Rollout{SkillID: "s", Version: "1", Action: fleet.RolloutUninstall, Targets: []fleet.Target{fleet.AllTarget()}}, false},
		{"no target", fleet.Rollout{SkillID: "s", Action: fleet.RolloutInstall}, false},
		{"bad action", fleet.Rollout{SkillID: "s", Action: "upgrade", Targets: []fleet.Target{fleet.AllTarget()}}, false},
		{"bad strategy", fleet.Rollout{SkillID: "s", Action: fleet.RolloutInstall, Targets: []fleet.Target{fleet.AllTarget()}, Strategy: fleet.Strategy{MaxInFlight: -2}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.r.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
