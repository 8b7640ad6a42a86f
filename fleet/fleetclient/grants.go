package fleetclient

import (
	"context"
	"net/http"
	"net/url"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// SkillGrants lists every grant: a skill's leave to emit management types
// despite the default ban (docs/security.md, "Skill grants").
func (c *Client) SkillGrants(ctx context.Context) ([]fleet.SkillGrant, error) {
	var out api.GrantsResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skill-grants", out: &out})
	return out.Grants, err
}

// PutSkillGrant creates or replaces the grant of g.Skill on g.Device (every
// device when empty).
func (c *Client) PutSkillGrant(ctx context.Context, g fleet.SkillGrant) (fleet.SkillGrant, error) {
	var out api.GrantResponse
	body := api.GrantRequest{Device: g.Device, Allow: g.Allow}
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/skill-grants/" + seg(g.Skill), json: body, out: &out})
	return out.Grant, err
}

// RemoveSkillGrant deletes the grant of skill on device ("" for the
// fleet-wide one).
func (c *Client) RemoveSkillGrant(ctx context.Context, skill, device string) error {
	var q url.Values
	if device != "" {
		q = url.Values{"device": {device}}
	}
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/skill-grants/" + seg(skill), query: q})
}
