package api

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// Strategy is the API's Strategy: fleet.Strategy with the durations as Go's
// duration text. Zero fields are omitted, and mean none (no cap, no
// deadline, no ramp: docs/api.md).
type Strategy struct {
	Canary              int      `json:"canary,omitempty"`
	MaxInFlight         int      `json:"max_in_flight,omitempty"`
	FailureThresholdPct float64  `json:"failure_threshold_pct,omitempty"`
	MinExecuted         int      `json:"min_executed,omitempty"` // finished executions before the threshold may abort
	Timeout             Duration `json:"timeout,omitempty"`      // per device, from its start
	Deadline            Duration `json:"deadline,omitempty"`     // whole rollout, from its creation
	RatePerMin          int      `json:"rate_per_min,omitempty"`
	RampBasePerMin      int      `json:"ramp_base_per_min,omitempty"`
	RampEvery           Duration `json:"ramp_every,omitempty"`
}

// NewStrategy is s on the wire.
func NewStrategy(s fleet.Strategy) Strategy {
	return Strategy{Canary: s.Canary, MaxInFlight: s.MaxInFlight, FailureThresholdPct: s.FailureThresholdPct,
		MinExecuted: s.MinExecuted, Timeout: Duration(s.Timeout), Deadline: Duration(s.Deadline),
		RatePerMin: s.RatePerMin, RampBasePerMin: s.RampBasePerMin, RampEvery: Duration(s.RampEvery)}
}

// Strategy is the fleet's strategy, validated.
func (s Strategy) Strategy() (fleet.Strategy, error) {
	out := fleet.Strategy{Canary: s.Canary, MaxInFlight: s.MaxInFlight, FailureThresholdPct: s.FailureThresholdPct,
		MinExecuted: s.MinExecuted, Timeout: time.Duration(s.Timeout), Deadline: time.Duration(s.Deadline),
		RatePerMin: s.RatePerMin, RampBasePerMin: s.RampBasePerMin, RampEvery: time.Duration(s.RampEvery)}
	return out, out.Validate()
}

// Duration is a strategy duration on the wire (timeout, deadline,
// ramp_every): Go's duration text ("10m"), as docs/api.md has it. Reading
// also accepts a number of nanoseconds, and "" or null as zero.
type Duration time.Duration

// MarshalJSON writes the duration as text ("0s" for zero, which Strategy omits).
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "10m", 600000000000, "" or null. A bad value is an
// invalid-request error that names the field.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if s == "" {
			*d = 0
			return nil
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fleet.Errorf(fleet.EINVALID, "strategy duration %q (timeout, deadline or ramp_every): want a duration such as 10m", s)
		}
		*d = Duration(v)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fleet.Errorf(fleet.EINVALID, "strategy duration %s (timeout, deadline or ramp_every): want a duration such as \"10m\"", b)
	}
	*d = Duration(n)
	return nil
}

// RolloutRequest is POST /v1/rollouts.
type RolloutRequest struct {
	SkillID  string              `json:"skill_id"`
	Version  string              `json:"version,omitempty"` // install only; "" is the latest
	Action   fleet.RolloutAction `json:"action"`
	Targets  []fleet.Target      `json:"targets"`
	Strategy Strategy            `json:"strategy"`
}

// Rollout is the API's Rollout: one install or uninstall across devices,
// with its executions counted by state.
type Rollout struct {
	ID         int64               `json:"id"`
	SkillID    string              `json:"skill_id"`
	Version    string              `json:"version"`
	Action     fleet.RolloutAction `json:"action"`
	Targets    []fleet.Target      `json:"targets"`
	Strategy   Strategy            `json:"strategy"`
	State      fleet.RolloutState  `json:"state"`
	Reason     string              `json:"reason,omitempty"` // why it failed, aborted or was canceled
	CreatedBy  string              `json:"created_by,omitempty"`
	CreatedAt  time.Time           `json:"created_at"`
	UpdatedAt  time.Time           `json:"updated_at"`
	StartedAt  time.Time           `json:"started_at,omitzero"`  // first entered in_progress
	FinishedAt time.Time           `json:"finished_at,omitzero"` // entered a terminal state
	Counts     Counts              `json:"counts"`
}

// NewRollout is r on the wire.
func NewRollout(r *fleet.Rollout) Rollout {
	return Rollout{ID: r.ID, SkillID: r.SkillID, Version: r.Version, Action: r.Action, Targets: r.Targets,
		Strategy: NewStrategy(r.Strategy), State: r.State, Reason: r.Reason, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Counts: NewCounts(r.Counts)}
}

// NewRollouts is NewRollout of each, never nil.
func NewRollouts(rs []*fleet.Rollout) []Rollout {
	out := make([]Rollout, 0, len(rs))
	for _, r := range rs {
		out = append(out, NewRollout(r))
	}
	return out
}

// Terminal reports whether the rollout will not change any more.
func (r Rollout) Terminal() bool { return r.State.Terminal() }

// Counts are a rollout's executions by state (fleet.ExecState).
type Counts struct {
	Queued     int `json:"queued"`
	InProgress int `json:"in_progress"`
	Succeeded  int `json:"succeeded"`
	Failed     int `json:"failed"`
	TimedOut   int `json:"timed_out"`
	Canceled   int `json:"canceled"`
}

// NewCounts is the store's counts by state on the wire.
func NewCounts(m map[fleet.ExecState]int) Counts {
	return Counts{Queued: m[fleet.ExecQueued], InProgress: m[fleet.ExecInProgress], Succeeded: m[fleet.ExecSucceeded],
		Failed: m[fleet.ExecFailed], TimedOut: m[fleet.ExecTimedOut], Canceled: m[fleet.ExecCanceled]}
}

// Total is the number of executions.
func (c Counts) Total() int {
	return c.Queued + c.InProgress + c.Succeeded + c.Failed + c.TimedOut + c.Canceled
}

// Execution is the API's Execution: one device's part in a rollout.
// Reason says why it ended as it did, or, while it is unfinished, why it
// cannot progress ("offline since <time>", "waiting for canary", "paused",
// ...: docs/api.md); Blocked is set when only a change outside the rollout
// (its device coming back) lets it progress.
type Execution struct {
	RolloutID  int64           `json:"rollout_id"`
	DeviceID   string          `json:"device_id"`
	State      fleet.ExecState `json:"state"`
	Reason     string          `json:"reason"`
	Blocked    bool            `json:"blocked,omitempty"`
	Canary     bool            `json:"canary"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	FinishedAt time.Time       `json:"finished_at,omitzero"`
	Attempts   int             `json:"attempts"`
}

// NewExecutions is each execution on the wire, never nil.
func NewExecutions(es []*fleet.Execution) []Execution {
	out := make([]Execution, 0, len(es))
	for _, e := range es {
		out = append(out, Execution{RolloutID: e.RolloutID, DeviceID: e.DeviceID, State: e.State, Reason: e.Reason,
			Blocked: e.Blocked, Canary: e.Canary, StartedAt: e.StartedAt, FinishedAt: e.FinishedAt, Attempts: e.Attempts})
	}
	return out
}

// RolloutResponse is POST /v1/rollouts (201) and the pause, resume and
// abort answers.
type RolloutResponse struct {
	Rollout Rollout `json:"rollout"`
}

// RolloutsResponse is GET /v1/rollouts.
type RolloutsResponse struct {
	Rollouts []Rollout `json:"rollouts"`
}

// RolloutDetail is GET /v1/rollouts/{id}: a rollout with its executions.
type RolloutDetail struct {
	Rollout    Rollout     `json:"rollout"`
	Executions []Execution `json:"executions"`
}

// Settled reports whether the rollout is over as far as waiting can tell:
// it is terminal, or it has unfinished executions and every one of them is
// Blocked (every online target finished; what is left waits for devices to
// come back). Without executions (a counts-only answer) it is Terminal.
func (d RolloutDetail) Settled() bool {
	if d.Rollout.Terminal() {
		return true
	}
	open := 0
	for _, e := range d.Executions {
		if e.State.Terminal() {
			continue
		}
		if !e.Blocked {
			return false
		}
		open++
	}
	return open > 0
}

// Unfinished is the executions not yet ended, in order.
func (d RolloutDetail) Unfinished() []Execution {
	var out []Execution
	for _, e := range d.Executions {
		if !e.State.Terminal() {
			out = append(out, e)
		}
	}
	return out
}

// AbortRequest is POST /v1/rollouts/{id}/abort (the body is optional).
type AbortRequest struct {
	Rollback bool `json:"rollback"`
}
