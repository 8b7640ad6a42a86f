package fleet

import (
	"context"
	"encoding/json"
	"time"
)

// MaxSettings caps the settings object of one assignment.
const MaxSettings = 64 << 10

// AssignmentAction says what an assignment asks of the devices it targets.
type AssignmentAction string

const (
	// AssignInstall: the skill is desired, at Version ("" = the latest
	// published when the desired document is computed), with Settings.
	AssignInstall AssignmentAction = "install"
	// AssignUninstall: the skill is not desired, overriding a less specific
	// install (an exception: "all but the bedroom").
	AssignUninstall AssignmentAction = "uninstall"
	// AssignConfigure: Settings only; whether the skill is desired is left to
	// the install and uninstall assignments (`chorus fleet skill config`).
	AssignConfigure AssignmentAction = "configure"
)

// Assignment binds a skill to a target. There is at most one assignment per
// (skill, target); Put replaces it whole.
//
// A device's desired skills are computed from every assignment that matches
// it (by its id, by any of its tags, or all) — see ComputeDesired:
//
//   - Presence and version: among the matching install and uninstall
//     assignments of a skill, the most specific wins (device > tag > all);
//     between equally specific ones (two tags) the most recently put wins.
//   - Settings: the Settings objects of the matching install and configure
//     assignments are merged key by key, less specific first and, at equal
//     specificity, older first, so a device setting overrides a tag setting,
//     which overrides a fleet-wide one (balena's variable precedence).
type Assignment struct {
	ID       int64            `json:"id"`
	SkillID  string           `json:"skill_id"`
	Target   Target           `json:"target"`
	Action   AssignmentAction `json:"action"`
	Version  string           `json:"version,omitempty"`
	Settings json.RawMessage  `json:"settings,omitempty"`

	// Seq orders assignments by their last Put; a larger Seq is newer.
	Seq       int64     `json:"seq"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Validate checks the skill id, the target, the action and that only an
// install names a version and an uninstall carries no settings.
func (a *Assignment) Validate() error {
	if err := ValidSkillID(a.SkillID); err != nil {
		return err
	}
	if err := a.Target.Validate(); err != nil {
		return err
	}
	switch a.Action {
	case AssignInstall:
		if a.Version != "" {
			if err := ValidVersion(a.Version); err != nil {
				return err
			}
		}
	case AssignUninstall, AssignConfigure:
		if a.Version != "" {
			return Errorf(EINVALID, "assignment %s %s: only an install names a version", a.Action, a.SkillID)
		}
	default:
		return Errorf(EINVALID, "assignment action %q: want install, uninstall or configure", a.Action)
	}
	if a.Action == AssignUninstall && len(a.Settings) > 0 {
		return Errorf(EINVALID, "assignment uninstall %s: takes no settings", a.SkillID)
	}
	if a.Action == AssignConfigure && len(a.Settings) == 0 {
		return Errorf(EINVALID, "assignment configure %s: settings are required", a.SkillID)
	}
	return ValidJSONObject("settings", a.Settings, MaxSettings)
}

// specificity ranks targets for precedence: device > tag > all.
func (t Target) specificity() int {
	switch t.Kind {
	case TargetDevice:
		return 2
	case TargetTag:
		return 1
	}
	return 0
}

// AssignmentFilter narrows ListAssignments. The zero value lists all.
type AssignmentFilter struct {
	SkillID string
	Target  *Target
}

// AssignmentService keeps assignments and derives desired documents.
//
// DesiredFor computes the device's desired document from the assignments,
// its tags and the catalog, and stores it. The version increases only when
// the computed skills differ from the stored document, so calling it again
// (every reconcile pass, every start-up) is free of churn. Versions come from
// one gateway-wide counter: they grow per device, and a device id that is
// removed and added again never gets a version its agent already applied.
type AssignmentService interface {
	PutAssignment(ctx context.Context, a *Assignment) error
	GetAssignment(ctx context.Context, skillID string, t Target) (*Assignment, error)
	DeleteAssignment(ctx context.Context, skillID string, t Target) error
	ListAssignments(ctx context.Context, f AssignmentFilter) ([]*Assignment, error)

	DesiredFor(ctx context.Context, deviceID string) (Desired, error)
}
