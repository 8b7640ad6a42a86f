package fleetclient

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/chorus-edge/chorus/configs"
)

// The wire types of docs/api.md. Readers ignore unknown fields, so a newer
// gateway that adds fields stays compatible.

// Device is one satellite as the controller knows it.
type Device struct {
	ID             string          `json:"id"`
	Tags           []string        `json:"tags"`
	Online         bool            `json:"online"`
	LastSeen       time.Time       `json:"last_seen,omitzero"`
	BirthSession   uint64          `json:"birth_session"`
	AgentVersion   string          `json:"agent_version"`
	Connectivity   json.RawMessage `json:"connectivity,omitempty"` // docs/topics.md `connectivity`, verbatim
	SkillsLoaded   int             `json:"skills_loaded"`
	SkillsDesired  int             `json:"skills_desired"`
	AppliedVersion int64           `json:"applied_version"`
	DesiredVersion int64           `json:"desired_version"`
	Drift          bool            `json:"drift"`
	CreatedAt      time.Time       `json:"created_at"`
}

// Connectivity is the part of docs/topics.md's `connectivity` payload the
// CLI shows. A nil field was not reported.
type Connectivity struct {
	Network  *bool `json:"network"`
	Internet *bool `json:"internet"`
	GUI      *bool `json:"gui"`
}

// ParseConnectivity decodes d.Connectivity; ok is false when the device has
// not reported it (absent, null or {}) or reported something unreadable.
func (d Device) ParseConnectivity() (c Connectivity, ok bool) {
	if len(d.Connectivity) == 0 || json.Unmarshal(d.Connectivity, &c) != nil {
		return Connectivity{}, false
	}
	return c, c.Network != nil || c.Internet != nil || c.GUI != nil
}

// Enrolled is the answer to adding or rotating a device: the only time its
// secret is shown.
type Enrolled struct {
	Device      Device                   `json:"device"`
	Credentials configs.AgentCredentials `json:"credentials"`
}

// Credentials are MQTT credentials of an integration or an operator.
type Credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Integration is an observer such as Home Assistant.
type Integration struct {
	Name  string   `json:"name"`
	Allow []string `json:"allow"`
}

// IntegrationAdded is the answer to adding an integration.
type IntegrationAdded struct {
	Integration Integration `json:"integration"`
	Credentials Credentials `json:"credentials"`
}

// Operator holds MQTT credentials for `chorus bus`.
type Operator struct {
	Name string `json:"name"`
}

// OperatorAdded is the answer to adding an operator.
type OperatorAdded struct {
	Operator    Operator    `json:"operator"`
	Credentials Credentials `json:"credentials"`
}

// SkillVersion is one published version of a skill.
type SkillVersion struct {
	SkillID      string    `json:"skill_id"`
	Version      string    `json:"version"`
	SHA256       string    `json:"sha256"`
	Size         int64     `json:"size"`
	Title        string    `json:"title"`
	Description  string    `json:"description"`
	Requirements []string  `json:"requirements"`
	PublishedAt  time.Time `json:"published_at"`
}

// SkillDetail is a skill's latest version and all its versions.
type SkillDetail struct {
	Skill    SkillVersion   `json:"skill"`
	Versions []SkillVersion `json:"versions"`
}

// SearchResult is one ranked catalog match.
type SearchResult struct {
	Skill SkillVersion `json:"skill"`
	Score float64      `json:"score"`
}

// The target kinds.
const (
	TargetDevice = "device"
	TargetTag    = "tag"
	TargetAll    = "all"
)

// Target names devices: one device, a tag, or all.
type Target struct {
	Kind  string `json:"kind"`
	Value string `json:"value,omitempty"`
}

func (t Target) String() string {
	if t.Kind == TargetAll {
		return "all devices"
	}
	return t.Kind + " " + t.Value
}

// Strategy paces a rollout. Zero fields are omitted so the gateway applies
// its defaults.
type Strategy struct {
	Canary              int      `json:"canary,omitempty"`
	MaxInFlight         int      `json:"max_in_flight,omitempty"`
	FailureThresholdPct float64  `json:"failure_threshold_pct,omitempty"`
	MinExecuted         int      `json:"min_executed,omitempty"`
	Timeout             Duration `json:"timeout,omitempty"`
}

// Duration is a time.Duration written as Go's duration text ("10m"), as
// docs/api.md has it; reading also accepts a number of nanoseconds.
type Duration time.Duration

// MarshalJSON writes the duration as text; zero is omitted by the caller's
// omitempty, or written as "0s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "10m", 600000000000, or "" and null as zero.
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
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want text like \"10m\" or nanoseconds", b)
	}
	*d = Duration(n)
	return nil
}

// The rollout actions.
const (
	ActionInstall   = "install"
	ActionUninstall = "uninstall"
)

// RolloutRequest creates a rollout.
type RolloutRequest struct {
	SkillID  string   `json:"skill_id"`
	Version  string   `json:"version,omitempty"` // install only; "" is the latest
	Action   string   `json:"action"`
	Targets  []Target `json:"targets"`
	Strategy Strategy `json:"strategy"`
}

// The rollout states of docs/api.md.
const (
	RolloutQueued     = "queued"
	RolloutInProgress = "in_progress"
	RolloutPaused     = "paused"
	RolloutSucceeded  = "succeeded"
	RolloutFailed     = "failed"
	RolloutAborted    = "aborted"
	RolloutCanceled   = "canceled"
)

// Rollout is one install or uninstall across devices.
type Rollout struct {
	ID        int64     `json:"id"`
	SkillID   string    `json:"skill_id"`
	Version   string    `json:"version,omitempty"`
	Action    string    `json:"action"`
	Targets   []Target  `json:"targets"`
	Strategy  Strategy  `json:"strategy"`
	State     string    `json:"state"`
	Reason    string    `json:"reason,omitempty"` // why it failed or was aborted, when the gateway says
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Counts    Counts    `json:"counts"`
}

// Terminal reports whether the rollout will not change any more.
func (r Rollout) Terminal() bool {
	switch r.State {
	case RolloutSucceeded, RolloutFailed, RolloutAborted, RolloutCanceled:
		return true
	}
	return false
}

// Counts are a rollout's executions by state.
type Counts struct {
	Queued     int `json:"queued"`
	InProgress int `json:"in_progress"`
	Succeeded  int `json:"succeeded"`
	Failed     int `json:"failed"`
	TimedOut   int `json:"timed_out"`
	Canceled   int `json:"canceled"`
}

// Total is the number of executions.
func (c Counts) Total() int {
	return c.Queued + c.InProgress + c.Succeeded + c.Failed + c.TimedOut + c.Canceled
}

// Execution is one device's part of a rollout.
type Execution struct {
	RolloutID  int64     `json:"rollout_id"`
	DeviceID   string    `json:"device_id"`
	State      string    `json:"state"`
	Reason     string    `json:"reason,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Attempts   int       `json:"attempts"`
}

// RolloutDetail is a rollout with its executions.
type RolloutDetail struct {
	Rollout    Rollout     `json:"rollout"`
	Executions []Execution `json:"executions"`
}

// AuditEntry is one operator action or execution transition.
type AuditEntry struct {
	ID      int64           `json:"id"`
	At      time.Time       `json:"at"`
	Actor   string          `json:"actor"`
	Action  string          `json:"action"`
	Subject string          `json:"subject"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}
