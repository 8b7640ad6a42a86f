package httpapi

import (
	"encoding/json"
	"time"

	"github.com/chorus-edge/chorus/fleet"
)

// deviceView is the API's Device (docs/api.md).
type deviceView struct {
	ID             string          `json:"id"`
	Tags           []string        `json:"tags"`
	Online         bool            `json:"online"`
	LastSeen       time.Time       `json:"last_seen,omitzero"`
	BirthSession   uint64          `json:"birth_session"`
	AgentVersion   string          `json:"agent_version"`
	Connectivity   json.RawMessage `json:"connectivity"`
	SkillsLoaded   int             `json:"skills_loaded"`
	SkillsDesired  int             `json:"skills_desired"`
	AppliedVersion int64           `json:"applied_version"`
	DesiredVersion int64           `json:"desired_version"`
	Drift          bool            `json:"drift"`
	CreatedAt      time.Time       `json:"created_at"`
}

// reportedSkills is the part of the skills payload the view counts.
type reportedSkills struct {
	Skills []struct {
		ID      string `json:"id"`
		Version string `json:"version"`
		State   string `json:"state"`
	} `json:"skills"`
}

// newDeviceView computes the loaded/desired counts and drift: a device
// drifts when it has not applied its desired document or a desired skill
// is not loaded at its desired version.
func newDeviceView(d *fleet.Device, want fleet.Desired) deviceView {
	v := deviceView{
		ID: d.ID, Tags: d.Tags, Online: d.Online, LastSeen: d.LastSeen, BirthSession: d.BirthSession,
		AgentVersion: d.AgentVersion, Connectivity: d.Connectivity, SkillsDesired: len(want.Skills),
		AppliedVersion: d.AppliedVersion, DesiredVersion: max(want.Version, d.DesiredVersion), CreatedAt: d.CreatedAt,
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if len(v.Connectivity) == 0 {
		v.Connectivity = json.RawMessage("{}")
	}
	var rep reportedSkills
	_ = json.Unmarshal(d.Reported, &rep)
	loadedAt := map[string]string{}
	for _, s := range rep.Skills {
		if s.State == "loaded" {
			v.SkillsLoaded++
			loadedAt[s.ID] = s.Version
		}
	}
	v.Drift = v.AppliedVersion < v.DesiredVersion
	for id, s := range want.Skills {
		if loadedAt[id] != s.Version {
			v.Drift = true
		}
	}
	return v
}

// strategyView is the API's Strategy: the timeout as a Go duration string.
type strategyView struct {
	Canary              int     `json:"canary"`
	MaxInFlight         int     `json:"max_in_flight"`
	FailureThresholdPct float64 `json:"failure_threshold_pct"`
	MinExecuted         int     `json:"min_executed"`
	Timeout             string  `json:"timeout"`
}

func (s strategyView) strategy() (fleet.Strategy, error) {
	out := fleet.Strategy{Canary: s.Canary, MaxInFlight: s.MaxInFlight,
		FailureThresholdPct: s.FailureThresholdPct, MinExecuted: s.MinExecuted}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil {
			return out, fleet.Errorf(fleet.EINVALID, "strategy.timeout %q: want a duration such as 10m", s.Timeout)
		}
		out.Timeout = d
	}
	return out, out.Validate()
}

func newStrategyView(s fleet.Strategy) strategyView {
	v := strategyView{Canary: s.Canary, MaxInFlight: s.MaxInFlight, FailureThresholdPct: s.FailureThresholdPct,
		MinExecuted: s.MinExecuted}
	if s.Timeout > 0 {
		v.Timeout = s.Timeout.String()
	}
	return v
}

// rolloutView is the API's Rollout.
type rolloutView struct {
	ID         int64               `json:"id"`
	SkillID    string              `json:"skill_id"`
	Version    string              `json:"version"`
	Action     fleet.RolloutAction `json:"action"`
	Targets    []fleet.Target      `json:"targets"`
	Strategy   strategyView        `json:"strategy"`
	State      fleet.RolloutState  `json:"state"`
	Reason     string              `json:"reason,omitempty"`
	CreatedBy  string              `json:"created_by,omitempty"`
	CreatedAt  time.Time           `json:"created_at"`
	UpdatedAt  time.Time           `json:"updated_at"`
	StartedAt  time.Time           `json:"started_at,omitzero"`
	FinishedAt time.Time           `json:"finished_at,omitzero"`
	Counts     map[string]int      `json:"counts"`
}

var execStates = []fleet.ExecState{fleet.ExecQueued, fleet.ExecInProgress, fleet.ExecSucceeded,
	fleet.ExecFailed, fleet.ExecTimedOut, fleet.ExecCanceled}

func newRolloutView(r *fleet.Rollout) rolloutView {
	v := rolloutView{ID: r.ID, SkillID: r.SkillID, Version: r.Version, Action: r.Action, Targets: r.Targets,
		Strategy: newStrategyView(r.Strategy), State: r.State, Reason: r.Reason, CreatedBy: r.CreatedBy,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Counts: make(map[string]int, len(execStates))}
	for _, s := range execStates {
		v.Counts[string(s)] = r.Counts[s]
	}
	return v
}

// executionView is the API's Execution.
type executionView struct {
	RolloutID  int64           `json:"rollout_id"`
	DeviceID   string          `json:"device_id"`
	State      fleet.ExecState `json:"state"`
	Reason     string          `json:"reason"`
	Canary     bool            `json:"canary"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	FinishedAt time.Time       `json:"finished_at,omitzero"`
	Attempts   int             `json:"attempts"`
}

func newExecutionView(e *fleet.Execution) executionView {
	return executionView{RolloutID: e.RolloutID, DeviceID: e.DeviceID, State: e.State, Reason: e.Reason,
		Canary: e.Canary, StartedAt: e.StartedAt, FinishedAt: e.FinishedAt, Attempts: e.Attempts}
}

// skillView is the API's SkillVersion (the manifest stays internal).
type skillView struct {
	SkillID      string    `json:"skill_id"`
	Version      string    `json:"version"`
	SHA256       string    `json:"sha256"`
	Size         int64     `json:"size"`
	Title        string    `json:"title"`
	Description  string    `json:"description"`
	Requirements []string  `json:"requirements"`
	PublishedAt  time.Time `json:"published_at"`
}

func newSkillView(v *fleet.SkillVersion) skillView {
	reqs := v.Requirements
	if reqs == nil {
		reqs = []string{}
	}
	return skillView{SkillID: v.SkillID, Version: v.Version, SHA256: v.SHA256, Size: v.Size, Title: v.Title,
		Description: v.Description, Requirements: reqs, PublishedAt: v.PublishedAt}
}

func skillViews(vs []*fleet.SkillVersion) []skillView {
	out := make([]skillView, 0, len(vs))
	for _, v := range vs {
		out = append(out, newSkillView(v))
	}
	return out
}
