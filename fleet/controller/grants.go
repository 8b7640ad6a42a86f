package controller

import (
	"context"
	"strings"

	"github.com/chorus-edge/chorus/broker"
	"github.com/chorus-edge/chorus/fleet"
)

// Skill grants (docs/security.md, "Skill grants"): the management and state
// types a skill may emit despite the default ban of ARCHITECTURE.md §6. The
// grants live in the store and reach the broker through the auth table, so a
// change applies to the skill's next publish without a reconnect.

// PutSkillGrant creates or replaces the grant of g.Skill on g.Device (every
// device when empty). Each allowed type must be one the broker restricts:
// granting anything else would be a no-op that reads like a permission.
func (c *Controller) PutSkillGrant(ctx context.Context, actor string, g *fleet.SkillGrant) (*fleet.SkillGrant, error) {
	for _, t := range g.Allow {
		if !broker.RestrictedForSkills(t) {
			return nil, fleet.Errorf(fleet.EINVALID, "grant for skill %s: %q is not restricted for skills (restricted: %s)",
				g.Skill, t, strings.Join(broker.SkillDenyTypes, ", "))
		}
	}
	if err := c.store.PutSkillGrant(ctx, g); err != nil {
		return nil, err
	}
	c.audit(ctx, actor, "skill.grant", "skill/"+g.Skill, map[string]any{"device": g.Scope(), "allow": g.Allow})
	return g, c.registryChanged(ctx)
}

// ListSkillGrants returns every grant.
func (c *Controller) ListSkillGrants(ctx context.Context) ([]*fleet.SkillGrant, error) {
	return c.store.ListSkillGrants(ctx)
}

// RemoveSkillGrant deletes the grant of skill on device ("" for the
// fleet-wide one); the skill is refused those types from its next publish.
func (c *Controller) RemoveSkillGrant(ctx context.Context, actor, skill, device string) error {
	if err := c.store.DeleteSkillGrant(ctx, skill, device); err != nil {
		return err
	}
	g := fleet.SkillGrant{Skill: skill, Device: device}
	c.audit(ctx, actor, "skill.revoke", "skill/"+skill, map[string]any{"device": g.Scope()})
	return c.registryChanged(ctx)
}

// skillGrantsOf merges the fleet-wide and the device's own grants into the
// device account's skill → allowed types map; nil when there are none.
func skillGrantsOf(grants []*fleet.SkillGrant, device string) map[string][]string {
	var m map[string][]string
	for _, g := range grants {
		if g.Device != "" && g.Device != device {
			continue
		}
		if m == nil {
			m = make(map[string][]string)
		}
		m[g.Skill] = append(m[g.Skill], g.Allow...)
	}
	return m
}
