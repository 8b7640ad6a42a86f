package fleetclient

import (
	"context"
	"net/http"

	"github.com/chorus-edge/chorus/fleet"
	"github.com/chorus-edge/chorus/fleet/api"
)

// CreateJoinToken makes a join token; the answer's Text is the token to
// give the satellites, shown only here.
func (c *Client) CreateJoinToken(ctx context.Context, req api.CreateJoinTokenRequest) (api.JoinTokenCreated, error) {
	if req.Tags == nil {
		req.Tags = []string{}
	}
	var out api.JoinTokenCreated
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/join-tokens", json: req, out: &out})
	return out, err
}

// JoinTokens lists the join tokens, revoked and used-up ones included.
func (c *Client) JoinTokens(ctx context.Context) ([]fleet.JoinToken, error) {
	var out api.JoinTokensResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/join-tokens", out: &out})
	return out.Tokens, err
}

// RevokeJoinToken revokes a join token and returns it.
func (c *Client) RevokeJoinToken(ctx context.Context, id string) (fleet.JoinToken, error) {
	var out api.JoinTokenResponse
	err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/join-tokens/" + seg(id), out: &out})
	return out.Token, err
}

// Join enrols a device with a join token (no operator token needed): the
// answer holds its credentials, or the pending ticket to poll with.
func (c *Client) Join(ctx context.Context, req api.JoinRequest) (api.JoinResponse, error) {
	var out api.JoinResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/join", json: req, out: &out})
	return out, err
}

// PollJoin asks whether a pending enrolment was accepted.
func (c *Client) PollJoin(ctx context.Context, t api.PendingTicket) (api.JoinResponse, error) {
	var out api.JoinResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/join/" + seg(t.ID), bearer: t.Secret, out: &out})
	return out, err
}

// PendingDevices lists the devices waiting for an accept or reject.
func (c *Client) PendingDevices(ctx context.Context) ([]fleet.PendingDevice, error) {
	var out api.PendingDevicesResponse
	err := c.do(ctx, request{method: http.MethodGet, path: "/v1/pending-devices", out: &out})
	return out.Pending, err
}

// AcceptPending adds a pending device to the fleet and returns it.
func (c *Client) AcceptPending(ctx context.Context, id string) (api.Device, error) {
	var out api.DeviceResponse
	err := c.do(ctx, request{method: http.MethodPost, path: "/v1/pending-devices/" + seg(id) + "/accept", out: &out})
	return out.Device, err
}

// RejectPending drops a pending device.
func (c *Client) RejectPending(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodPost, path: "/v1/pending-devices/" + seg(id) + "/reject"})
}
