package api

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chorus-edge/chorus/configs"
	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/gateway/state"
)

// Device is the API's Device: one satellite as the controller knows it, with
// the counts and drift the controller computes from its reports.
type Device struct {
	ID             string          `json:"id"`
	Tags           []string        `json:"tags"`
	Online         bool            `json:"online"`
	LastSeen       time.Time       `json:"last_seen,omitzero"`
	BirthSession   uint64          `json:"birth_session"`
	AgentVersion   string          `json:"agent_version"`
	Connectivity   json.RawMessage `json:"connectivity"` // docs/topics.md `connectivity`, verbatim; {} until reported
	SkillsLoaded   int             `json:"skills_loaded"`
	SkillsDesired  int             `json:"skills_desired"`
	AppliedVersion int64           `json:"applied_version"`
	DesiredVersion int64           `json:"desired_version"`
	Drift          bool            `json:"drift"`
	CreatedAt      time.Time       `json:"created_at"`
	// Skills is set on GET /v1/devices/{id} only: each skill of the desired
	// document and each the device reports, with its state and why.
	Skills []DeviceSkill `json:"skills,omitempty"`
}

// DeviceSkill is one skill of a device as `device show` lists it.
type DeviceSkill struct {
	ID string `json:"id"`
	// Desired is the version the desired document names; "" for a skill
	// the fleet does not manage there (bundled or user).
	Desired string `json:"desired,omitempty"`
	// Version is the reported version, "" when not reported.
	Version string `json:"version,omitempty"`
	// State is the reported state (docs/topics.md skills), or "missing"
	// when the desired document names the skill and the device does not
	// report it.
	State string `json:"state"`
	// Reason says why it is not loaded as desired: the skill's error, what
	// it waits for, or the version it runs instead.
	Reason string `json:"reason,omitempty"`
}

// SkillMissing is DeviceSkill.State of a desired skill the device does not report.
const SkillMissing = "missing"

// NewDeviceDetail is NewDevice with the per-skill list.
func NewDeviceDetail(d *fleet.Device, want fleet.Desired) Device {
	v := NewDevice(d, want)
	rep, _ := state.ParseSkills(d.Reported) // validated when stored
	seen := map[string]bool{}
	for _, s := range rep.Skills {
		seen[s.ID] = true
		v.Skills = append(v.Skills, deviceSkill(s, want.Skills[s.ID].Version))
	}
	for _, id := range slices.Sorted(maps.Keys(want.Skills)) {
		if !seen[id] {
			v.Skills = append(v.Skills, DeviceSkill{ID: id, Desired: want.Skills[id].Version, State: SkillMissing,
				Reason: "in the desired document, not reported by the device (not installed yet)"})
		}
	}
	return v
}

func deviceSkill(s state.Skill, desired string) DeviceSkill {
	out := DeviceSkill{ID: s.ID, Desired: desired, Version: s.Version, State: string(s.State), Reason: s.Error}
	switch {
	case s.State == state.Waiting && len(s.WaitingFor) > 0:
		out.Reason = "waiting for " + strings.Join(s.WaitingFor, ", ")
	case s.State == state.Loaded && desired != "" && s.Version != desired:
		out.Reason = "runs " + s.Version + ", desired " + desired
	case s.State == state.Inactive && out.Reason == "":
		out.Reason = "deactivated on the device"
	}
	return out
}

// reportedSkills is the part of the skills payload NewDevice counts.
type reportedSkills struct {
	Skills []struct {
		ID      string `json:"id"`
		Version string `json:"version"`
		State   string `json:"state"`
	} `json:"skills"`
}

// NewDevice is d as the API shows it, with want its desired document: the
// loaded/desired counts, and drift: a device drifts when it has not applied
// its desired document or a desired skill is not loaded at its desired
// version.
func NewDevice(d *fleet.Device, want fleet.Desired) Device {
	v := Device{
		ID: d.ID, Tags: nonNil(d.Tags), Online: d.Online, LastSeen: d.LastSeen, BirthSession: d.BirthSession,
		AgentVersion: d.AgentVersion, Connectivity: d.Connectivity, SkillsDesired: len(want.Skills),
		AppliedVersion: d.AppliedVersion, DesiredVersion: max(want.Version, d.DesiredVersion), CreatedAt: d.CreatedAt,
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

// DevicesResponse is GET /v1/devices.
type DevicesResponse struct {
	Devices []Device `json:"devices"`
}

// AddDeviceRequest is POST /v1/devices.
type AddDeviceRequest struct {
	ID   string   `json:"id"`
	Tags []string `json:"tags"`
}

// TagsRequest is PUT /v1/devices/{id}/tags.
type TagsRequest struct {
	Tags []string `json:"tags"`
}

// DeviceResponse is GET /v1/devices/{id} and PUT /v1/devices/{id}/tags.
type DeviceResponse struct {
	Device Device `json:"device"`
}

// Enrolled is the answer to adding (201) or rotating a device: the only
// time its secret is shown, as the agent credentials file.
type Enrolled struct {
	Device      Device                   `json:"device"`
	Credentials configs.AgentCredentials `json:"credentials"`
}

// DeviceSkillsRequest is POST /v1/device/skills: a device asking for its
// own skills (SKILL_MANAGER.md §10). It names no device: the device is the
// Basic auth user.
type DeviceSkillsRequest struct {
	Action   fleet.AssignmentAction `json:"action"`
	Packages []string               `json:"packages"`
}

// DeviceSkillsResponse is the version of the device's desired document
// that holds the change, and that document's skills.
type DeviceSkillsResponse struct {
	DesiredVersion int64                         `json:"desired_version"`
	Skills         map[string]fleet.DesiredSkill `json:"skills"`
}

// NewDeviceSkillsResponse answers with doc, its skills {} rather than null.
func NewDeviceSkillsResponse(doc fleet.Desired) DeviceSkillsResponse {
	skills := doc.Skills
	if skills == nil {
		skills = map[string]fleet.DesiredSkill{}
	}
	return DeviceSkillsResponse{DesiredVersion: doc.Version, Skills: skills}
}
