package fleet_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

func TestExecStateMachine(t *testing.T) {
	all := []fleet.ExecState{fleet.ExecQueued, fleet.ExecInProgress, fleet.ExecSucceeded,
		fleet.ExecFailed, fleet.ExecTimedOut, fleet.ExecCanceled}
	legal := map[[2]fleet.ExecState]bool{
		{fleet.ExecQueued, fleet.ExecInProgress}:    true,
		{fleet.ExecQueued, fleet.ExecFailed}:        true,
		{fleet.ExecQueued, fleet.ExecCanceled}:      true,
		{fleet.ExecQueued, fleet.ExecTimedOut}:      true, // the rollout's deadline
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

func TestStrategyControls(t *testing.T) {
	bad := []struct {
		name string
		s    fleet.Strategy
		want string
	}{
		{"negative rate", fleet.Strategy{RatePerMin: -1}, "rate -1/min: must not be negative"},
		{"negative deadline", fleet.Strategy{Deadline: -time.Second}, "deadline -1s: must not be negative"},
		{"ramp without rate", fleet.Strategy{RampBasePerMin: 5}, "needs a rate to ramp up to"},
		{"ramp above rate", fleet.Strategy{RatePerMin: 4, RampBasePerMin: 5}, "above the rate"},
		{"ramp interval without base", fleet.Strategy{RatePerMin: 4, RampEvery: time.Minute}, "needs a ramp base rate"},
		{"negative ramp", fleet.Strategy{RatePerMin: 4, RampBasePerMin: -2}, "ramp -2/min: must not be negative"},
	}
	for _, tt := range bad {
		err := tt.s.Validate()
		if fleet.ErrorCode(err) != fleet.EINVALID || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want EINVALID naming %q", tt.name, err, tt.want)
		}
	}
	if err := (fleet.Strategy{RatePerMin: 40, RampBasePerMin: 5, RampEvery: time.Minute, Deadline: time.Hour}).Validate(); err != nil {
		t.Errorf("valid controls refused: %v", err)
	}
}

func TestStartRate(t *testing.T) {
	ramp := fleet.Strategy{RatePerMin: 40, RampBasePerMin: 5}
	for _, tt := range []struct {
		s       fleet.Strategy
		elapsed time.Duration
		want    int
	}{
		{fleet.Strategy{}, time.Hour, 0},
		{fleet.Strategy{RatePerMin: 10}, 0, 10},
		{ramp, 0, 5},
		{ramp, 59 * time.Second, 5},
		{ramp, time.Minute, 10},
		{ramp, 2*time.Minute + time.Second, 20},
		{ramp, 3 * time.Minute, 40},
		{ramp, 24 * time.Hour, 40},
		{fleet.Strategy{RatePerMin: 30, RampBasePerMin: 4, RampEvery: 10 * time.Second}, 30 * time.Second, 30},
		{ramp, -time.Minute, 5},
	} {
		if got := tt.s.StartRate(tt.elapsed); got != tt.want {
			t.Errorf("%+v StartRate(%s) = %d, want %d", tt.s, tt.elapsed, got, tt.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]int{"": 0, "0": 0, "10/min": 10, " 5 /min": 5, "7": 7} {
		if got, err := fleet.ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-3/min", "fast", "10/s", "1.5/min", "/min"} {
		_, err := fleet.ParseRate(in)
		if fleet.ErrorCode(err) != fleet.EINVALID || !strings.Contains(err.Error(), "e.g. 10/min") {
			t.Errorf("ParseRate(%q) = %v, want EINVALID naming the form", in, err)
		}
	}
}
