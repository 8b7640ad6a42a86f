package fleetclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// The calls, one per row of docs/api.md, in its order. Each decodes into
// the fleet/api type the server encodes.

// Devices lists the devices f selects: those tagged f.Tag when it is not
// "", only the online or offline ones when f.Online is set (GET
// /v1/devices?tag=T&online=B).
func (c *Client) Devices(ctx context.Context, f fleet.DeviceFilter) ([]api.Device, error) {
	q := url.Values{}
	if f.Tag != "" {
		q.Set("tag", f.Tag)
	}
	if f.Online != nil {
		q.Set("online", strconv.FormatBool(*f.Online))
	}
	var out api.DevicesResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/devices", query: q, out: &out})
	return out.Devices, err
}

// AddDevice enrols a device and returns its credentials, shown only here.
func (c *Client) AddDevice(ctx context.Context, id string, tags []string) (api.Enrolled, error) {
	if tags == nil {
		tags = []string{}
	}
	var out api.Enrolled
	body := api.AddDeviceRequest{ID: id, Tags: tags}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/devices", json: body, out: &out})
	return out, err
}

// Device returns one device.
func (c *Client) Device(ctx context.Context, id string) (api.Device, error) {
	var out api.DeviceResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/devices/" + seg(id), out: &out})
	return out.Device, err
}

// RemoveDevice revokes and deletes a device.
func (c *Client) RemoveDevice(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/devices/" + seg(id)})
}

// SetTags replaces a device's tags.
func (c *Client) SetTags(ctx context.Context, id string, tags []string) (api.Device, error) {
	if tags == nil {
		tags = []string{}
	}
	var out api.DeviceResponse
	body := api.TagsRequest{Tags: tags}
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/devices/" + seg(id) + "/tags", json: body, out: &out})
	return out.Device, err
}

// RotateDevice replaces a device's secret and signing key.
func (c *Client) RotateDevice(ctx context.Context, id string) (api.Enrolled, error) {
	var out api.Enrolled
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/devices/" + seg(id) + "/rotate", out: &out})
	return out, err
}

// Integrations lists the integrations.
func (c *Client) Integrations(ctx context.Context) ([]fleet.Integration, error) {
	var out api.IntegrationsResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/integrations", out: &out})
	return out.Integrations, err
}

// AddIntegration creates an integration allowed to send the given types.
func (c *Client) AddIntegration(ctx context.Context, name string, allow []string) (api.IntegrationAdded, error) {
	if allow == nil {
		allow = []string{}
	}
	var out api.IntegrationAdded
	body := api.IntegrationRequest{Name: name, Allow: allow}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/integrations", json: body, out: &out})
	return out, err
}

// RemoveIntegration deletes an integration.
func (c *Client) RemoveIntegration(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/integrations/" + seg(name)})
}

// Operators lists the MQTT operators.
func (c *Client) Operators(ctx context.Context) ([]fleet.Operator, error) {
	var out api.OperatorsResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/operators", out: &out})
	return out.Operators, err
}

// AddOperator creates MQTT operator credentials.
func (c *Client) AddOperator(ctx context.Context, name string) (api.OperatorAdded, error) {
	var out api.OperatorAdded
	body := api.OperatorRequest{Name: name}
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/operators", json: body, out: &out})
	return out, err
}

// RemoveOperator deletes an operator.
func (c *Client) RemoveOperator(ctx context.Context, name string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/v1/operators/" + seg(name)})
}

// Publish uploads a skill archive (from `chorus skill pack`).
func (c *Client) Publish(ctx context.Context, archive io.Reader) (fleet.SkillVersion, error) {
	var out api.SkillResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/skills", raw: archive, rawType: "application/gzip", out: &out})
	return out.Skill, err
}

// Skills lists the latest version of every skill.
func (c *Client) Skills(ctx context.Context) ([]fleet.SkillVersion, error) {
	var out api.SkillsResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills", out: &out})
	return out.Skills, err
}

// Skill returns a skill and its versions.
func (c *Client) Skill(ctx context.Context, id string) (api.SkillDetail, error) {
	var out api.SkillDetail
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills/" + seg(id), out: &out})
	return out, err
}

// Search ranks the catalog against q; limit 0 leaves the gateway's default.
func (c *Client) Search(ctx context.Context, q string, limit int) ([]api.SearchResult, error) {
	query := url.Values{"q": {q}}
	if limit > 0 {
		query.Set("limit", strconv.Itoa(limit))
	}
	var out api.SearchResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills/search", query: query, out: &out})
	return out.Results, err
}

// Resolve finds the one skill a name means; not_found carries the
// gateway's "did you mean ...?".
func (c *Client) Resolve(ctx context.Context, q string) (fleet.SkillVersion, error) {
	var out api.SkillResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/skills/resolve", query: url.Values{"q": {q}}, out: &out})
	return out.Skill, err
}

// ConfigureSkill sets a skill's settings for a target and returns the
// assignment that holds them.
func (c *Client) ConfigureSkill(ctx context.Context, id string, t fleet.Target, settings json.RawMessage) (fleet.Assignment, error) {
	var out api.AssignmentResponse
	body := api.SkillConfigRequest{Target: t, Settings: settings}
	err := c.do(ctx, request{method: http.MethodPut, path: "/v1/skills/" + seg(id) + "/config", json: body, out: &out})
	return out.Assignment, err
}

// CreateRollout starts an install or uninstall.
func (c *Client) CreateRollout(ctx context.Context, r api.RolloutRequest) (api.Rollout, error) {
	var out api.RolloutResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/rollouts", json: r, out: &out})
	return out.Rollout, err
}

// Rollouts lists rollouts, only those in state when it is not "".
func (c *Client) Rollouts(ctx context.Context, state fleet.RolloutState) ([]api.Rollout, error) {
	var q url.Values
	if state != "" {
		q = url.Values{"state": {string(state)}}
	}
	var out api.RolloutsResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/rollouts", query: q, out: &out})
	return out.Rollouts, err
}

// Rollout returns a rollout and its executions.
func (c *Client) Rollout(ctx context.Context, id int64) (api.RolloutDetail, error) {
	var out api.RolloutDetail
	err := c.do(ctx, request{method: http.MethodGet, path: rolloutPath(id), out: &out})
	return out, err
}

// RolloutSummary returns a rollout with its counts, without its executions
// (GET /v1/rollouts/{id}?executions=false): the poll of a large rollout.
func (c *Client) RolloutSummary(ctx context.Context, id int64) (api.Rollout, error) {
	var out api.RolloutResponse
	err := c.do(ctx, request{method: http.MethodGet, path: rolloutPath(id), query: url.Values{"executions": {"false"}}, out: &out})
	return out.Rollout, err
}

// PauseRollout stops starting new executions.
func (c *Client) PauseRollout(ctx context.Context, id int64) (api.Rollout, error) {
	return c.rolloutAction(ctx, id, "pause", nil)
}

// ResumeRollout continues a paused rollout.
func (c *Client) ResumeRollout(ctx context.Context, id int64) (api.Rollout, error) {
	return c.rolloutAction(ctx, id, "resume", nil)
}

// AbortRollout ends a rollout; rollback also undoes what it did.
func (c *Client) AbortRollout(ctx context.Context, id int64, rollback bool) (api.Rollout, error) {
	return c.rolloutAction(ctx, id, "abort", api.AbortRequest{Rollback: rollback})
}

func (c *Client) rolloutAction(ctx context.Context, id int64, action string, body any) (api.Rollout, error) {
	var out api.RolloutResponse
	err := c.do(ctx, request{method: http.MethodPost, path: rolloutPath(id) + "/" + action, json: body, out: &out})
	return out.Rollout, err
}

func rolloutPath(id int64) string { return "/v1/rollouts/" + strconv.FormatInt(id, 10) }

// Audit lists audit entries; limit 0 and subject "" leave them unfiltered.
func (c *Client) Audit(ctx context.Context, limit int, subject string) ([]fleet.AuditEntry, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if subject != "" {
		q.Set("subject", subject)
	}
	var out api.AuditResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/audit", query: q, out: &out})
	return out.Entries, err
}

// Health is GET /healthz, which needs no credentials.
func (c *Client) Health(ctx context.Context) (api.Health, error) {
	var out api.Health
	err := c.do(ctx, request{method: http.MethodGet, path: "/healthz", out: &out})
	return out, err
}
