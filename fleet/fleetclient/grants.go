package fleetclient

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// SkillGrant lets a skill emit management types despite the default ban
// (docs/security.md, "Skill grants"). An empty Device means every device.
type SkillGrant struct {
	Skill     string    `json:"skill"`
	Device    string    `json:"device,omitempty"`
	Allow     []string  `json:"allow"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SkillGrants lists every grant.
func (c *Client) SkillGrants(ctx context.Context) ([]SkillGrant, error) {
	var out struct {
		Grants []SkillGrant `json:"grants"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skill-grants", out: &out})
	return out.Grants, err
}

// PutSkillGrant creates or replaces the grant of g.Skill on g.Device.
func (c *Client) PutSkillGrant(ctx context.Context, g SkillGrant) (SkillGrant, error) {
	var out struct {
		Grant SkillGrant `json:"grant"`
	}
	body := map[string]any{"device": g.Device, "allow": g.Allow}
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
