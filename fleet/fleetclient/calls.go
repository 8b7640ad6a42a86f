package fleetclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// The calls, one per row of docs/api.md, in its order.

// Devices lists the devices, only those tagged tag when tag is not "".
func (c *Client) Devices(ctx context.Context, tag string) ([]Device, error) {
	var q url.Values
	if tag != "" {
		q = url.Values{"tag": {tag}}
	}
	var out struct {
		Devices []Device `json:"devices"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/devices", query: q, out: &out})
	return out.Devices, err
}

// AddDevice enrols a device and returns its credentials, shown only here.
func (c *Client) AddDevice(ctx context.Context, id string, tags []string) (Enrolled, error) {
	if tags == nil {
		tags = []string{}
	}
	var out Enrolled
	body := map[string]any{"id": id, "tags": tags}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/devices", json: body, out: &out})
	return out, err
}

// Device returns one device.
func (c *Client) Device(ctx context.Context, id string) (Device, error) {
	var out struct {
		Device Device `json:"device"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/devices/" + seg(id), out: &out})
	return out.Device, err
}

// RemoveDevice revokes and deletes a device.
func (c *Client) RemoveDevice(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/devices/" + seg(id)})
}

// SetTags replaces a device's tags.
func (c *Client) SetTags(ctx context.Context, id string, tags []string) (Device, error) {
	if tags == nil {
		tags = []string{}
	}
	var out struct {
		Device Device `json:"device"`
	}
	body := map[string]any{"tags": tags}
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/devices/" + seg(id) + "/tags", json: body, out: &out})
	return out.Device, err
}

// RotateDevice replaces a device's secret and signing key.
func (c *Client) RotateDevice(ctx context.Context, id string) (Enrolled, error) {
	var out Enrolled
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/devices/" + seg(id) + "/rotate", out: &out})
	return out, err
}

// Integrations lists the integrations.
func (c *Client) Integrations(ctx context.Context) ([]Integration, error) {
	var out struct {
		Integrations []Integration `json:"integrations"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/integrations", out: &out})
	return out.Integrations, err
}

// AddIntegration creates an integration allowed to send the given types.
func (c *Client) AddIntegration(ctx context.Context, name string, allow []string) (IntegrationAdded, error) {
	if allow == nil {
		allow = []string{}
	}
	var out IntegrationAdded
	body := map[string]any{"name": name, "allow": allow}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/integrations", json: body, out: &out})
	return out, err
}

// RemoveIntegration deletes an integration.
func (c *Client) RemoveIntegration(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/integrations/" + seg(name)})
}

// Operators lists the MQTT operators.
func (c *Client) Operators(ctx context.Context) ([]Operator, error) {
	var out struct {
		Operators []Operator `json:"operators"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/operators", out: &out})
	return out.Operators, err
}

// AddOperator creates MQTT operator credentials.
func (c *Client) AddOperator(ctx context.Context, name string) (OperatorAdded, error) {
	var out OperatorAdded
	body := map[string]any{"name": name}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/operators", json: body, out: &out})
	return out, err
}

// RemoveOperator deletes an operator.
func (c *Client) RemoveOperator(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/operators/" + seg(name)})
}

// Publish uploads a skill archive (from `chorus skill pack`).
func (c *Client) Publish(ctx context.Context, archive io.Reader) (SkillVersion, error) {
	var out struct {
		Skill SkillVersion `json:"skill"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/skills", raw: archive, rawType: "application/gzip", out: &out})
	return out.Skill, err
}

// Skills lists the latest version of every skill.
func (c *Client) Skills(ctx context.Context) ([]SkillVersion, error) {
	var out struct {
		Skills []SkillVersion `json:"skills"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills", out: &out})
	return out.Skills, err
}

// Skill returns a skill and its versions.
func (c *Client) Skill(ctx context.Context, id string) (SkillDetail, error) {
	var out SkillDetail
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills/" + seg(id), out: &out})
	return out, err
}

// Search ranks the catalog against q; limit 0 leaves the gateway's default.
func (c *Client) Search(ctx context.Context, q string, limit int) ([]SearchResult, error) {
	query := url.Values{"q": {q}}
	if limit > 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Results []SearchResult `json:"results"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills/search", query: query, out: &out})
	return out.Results, err
}

// Resolve finds the one skill a name means; not_found carries the
// gateway's "did you mean ...?".
func (c *Client) Resolve(ctx context.Context, q string) (SkillVersion, error) {
	var out struct {
		Skill SkillVersion `json:"skill"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills/resolve", query: url.Values{"q": {q}}, out: &out})
	return out.Skill, err
}

// ConfigureSkill sets a skill's settings for a target; the answer is the
// assignment, verbatim.
func (c *Client) ConfigureSkill(ctx context.Context, id string, t Target, settings json.RawMessage) (json.RawMessage, error) {
	var out struct {
		Assignment json.RawMessage `json:"assignment"`
	}
	body := map[string]any{"target": t, "settings": settings}
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/skills/" + seg(id) + "/config", json: body, out: &out})
	return out.Assignment, err
}

// CreateRollout starts an install or uninstall.
func (c *Client) CreateRollout(ctx context.Context, r RolloutRequest) (Rollout, error) {
	var out struct {
		Rollout Rollout `json:"rollout"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/rollouts", json: r, out: &out})
	return out.Rollout, err
}

// Rollouts lists rollouts, only those in state when it is not "".
func (c *Client) Rollouts(ctx context.Context, state string) ([]Rollout, error) {
	var q url.Values
	if state != "" {
		q = url.Values{"state": {state}}
	}
	var out struct {
		Rollouts []Rollout `json:"rollouts"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/rollouts", query: q, out: &out})
	return out.Rollouts, err
}

// Rollout returns a rollout and its executions.
func (c *Client) Rollout(ctx context.Context, id int64) (RolloutDetail, error) {
	var out RolloutDetail
	err := c.do(ctx, request{method: http.MethodGet, path: rolloutPath(id), out: &out})
	return out, err
}

// PauseRollout stops starting new executions.
func (c *Client) PauseRollout(ctx context.Context, id int64) (Rollout, error) {
	return c.rolloutAction(ctx, id, "pause", nil)
}

// ResumeRollout continues a paused rollout.
func (c *Client) ResumeRollout(ctx context.Context, id int64) (Rollout, error) {
	return c.rolloutAction(ctx, id, "resume", nil)
}

// AbortRollout ends a rollout; rollback also undoes what it did.
func (c *Client) AbortRollout(ctx context.Context, id int64, rollback bool) (Rollout, error) {
	return c.rolloutAction(ctx, id, "abort", map[string]any{"rollback": rollback})
}

func (c *Client) rolloutAction(ctx context.Context, id int64, action string, body any) (Rollout, error) {
	var out struct {
		Rollout Rollout `json:"rollout"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: rolloutPath(id) + "/" + action, json: body, out: &out})
	return out.Rollout, err
}

func rolloutPath(id int64) string { return "/v1/rollouts/" + strconv.FormatInt(id, 10) }

// Audit lists audit entries; limit 0 and subject "" leave them unfiltered.
func (c *Client) Audit(ctx context.Context, limit int, subject string) ([]AuditEntry, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if subject != "" {
		q.Set("subject", subject)
	}
	var out struct {
		Entries []AuditEntry `json:"entries"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/audit", query: q, out: &out})
	return out.Entries, err
}
