package fleet

import (
	"context"
	"time"

	"github.com/chorus-edge/chorus/gateway/topic"
)

// MaxGrantTypes caps the types of one skill grant.
const MaxGrantTypes = 64

// SkillGrant lifts, for one skill, part of the default ban on management and
// state message types (ARCHITECTURE.md §6; docs/security.md, "Skill grants"):
// a skill such as an installer front end may then emit the types in Allow.
// Device scopes the grant to one device; empty means the skill on every
// device. Which types can be granted at all is the broker's rule
// (broker.RestrictedForSkills); the store only keeps the rows.
type SkillGrant struct {
	Skill     string    `json:"skill"`
	Device    string    `json:"device,omitempty"`
	Allow     []string  `json:"allow"` // types, or "prefix*" patterns; sorted, unique
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ValidIDs checks the skill id and, when set, the device id: what names a
// grant.
func (g *SkillGrant) ValidIDs() error {
	if err := ValidSkillID(g.Skill); err != nil {
		return err
	}
	if g.Device != "" {
		return ValidDeviceID(g.Device)
	}
	return nil
}

// Validate checks the ids and the syntax of every allowed type.
func (g *SkillGrant) Validate() error {
	if err := g.ValidIDs(); err != nil {
		return err
	}
	if len(g.Allow) == 0 {
		return Errorf(EINVALID, "grant for skill %s: allow at least one type", g.Skill)
	}
	if len(g.Allow) > MaxGrantTypes {
		return Errorf(EINVALID, "grant for skill %s: more than %d types", g.Skill, MaxGrantTypes)
	}
	for _, t := range g.Allow {
		if err := topic.ValidLevel(t); err != nil {
			return Errorf(EINVALID, "grant for skill %s: allow: %v", g.Skill, err)
		}
	}
	return nil
}

// Scope names where the grant applies: the device id, or "*" for every device.
func (g *SkillGrant) Scope() string {
	if g.Device == "" {
		return "*"
	}
	return g.Device
}

// GrantService keeps skill grants. PutSkillGrant creates or replaces the
// grant of (Skill, Device); a device-scoped grant needs the device
// (ENOTFOUND) and goes when the device is removed.
type GrantService interface {
	PutSkillGrant(ctx context.Context, g *SkillGrant) error
	ListSkillGrants(ctx context.Context) ([]*SkillGrant, error)
	DeleteSkillGrant(ctx context.Context, skill, device string) error
}
